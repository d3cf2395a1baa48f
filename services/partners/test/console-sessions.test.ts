import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async () => (await h.admin.createProduct({ name: "Console" })).product?.id ?? "";

/** The RPC's error code, or "ok" when it succeeded. */
async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

describe("console sessions", () => {
  it("are opened for a product, resolve to it, and keep only the token's hash", async () => {
    const productId = await newProduct();
    const opened = await h.partners.openConsoleSession({ productId, ttlSeconds: 600 });
    expect(opened.token).toMatch(/^cst_[A-Za-z0-9_-]{32}$/);
    if (!opened.expiresAt) throw new Error("opened without expires_at");
    const lifetime = timestampDate(opened.expiresAt).getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(500_000);
    expect(lifetime).toBeLessThanOrEqual(600_000);
    const resolved = await h.partners.authenticateConsoleSession({ token: opened.token });
    expect(resolved.productId).toBe(productId);
    const stored = await h.sql`select 1 from console_sessions where token_hash::text like ${`%${opened.token}%`}`;
    expect(stored).toHaveLength(0);
  });

  it("last a working day unless told otherwise, and refuse a lifetime outside 300-43200 seconds", async () => {
    const productId = await newProduct();
    const opened = await h.partners.openConsoleSession({ productId, ttlSeconds: 0 });
    if (!opened.expiresAt) throw new Error("opened without expires_at");
    expect(timestampDate(opened.expiresAt).getTime() - Date.now()).toBeGreaterThan(8 * 3600_000 - 60_000);
    for (const ttlSeconds of [299, 43_201, -1]) {
      expect(await codeOf(h.partners.openConsoleSession({ productId, ttlSeconds }))).toBe(Code.InvalidArgument);
    }
    expect(await codeOf(h.partners.openConsoleSession({ productId: "prd_unknown", ttlSeconds: 600 }))).toBe(
      Code.NotFound,
    );
  });

  it("end at expiry, on close (which is safe to repeat), and when the product's keys are rotated", async () => {
    const productId = await newProduct();
    const expiring = await h.partners.openConsoleSession({ productId, ttlSeconds: 600 });
    await h.sql`update console_sessions set expires_at = now() - interval '1 second' where product_id = ${productId}`;
    expect(await codeOf(h.partners.authenticateConsoleSession({ token: expiring.token }))).toBe(Code.Unauthenticated);

    const closing = await h.partners.openConsoleSession({ productId, ttlSeconds: 600 });
    const kept = await h.partners.openConsoleSession({ productId, ttlSeconds: 600 });
    await h.partners.closeConsoleSession({ token: closing.token });
    await h.partners.closeConsoleSession({ token: closing.token });
    expect(await codeOf(h.partners.authenticateConsoleSession({ token: closing.token }))).toBe(Code.Unauthenticated);
    expect(await codeOf(h.partners.authenticateConsoleSession({ token: kept.token }))).toBe("ok");

    const other = await newProduct();
    const elsewhere = await h.partners.openConsoleSession({ productId: other, ttlSeconds: 600 });
    await h.admin.rotateKeys({ productId });
    expect(await codeOf(h.partners.authenticateConsoleSession({ token: kept.token }))).toBe(Code.Unauthenticated);
    expect(await codeOf(h.partners.authenticateConsoleSession({ token: elsewhere.token }))).toBe("ok");
  });

  it("refuse what is not a live session", async () => {
    for (const token of ["", "cst_", "sk_live_abc", "apt_abc", `cst_${"A".repeat(32)}`]) {
      expect(await codeOf(h.partners.authenticateConsoleSession({ token }))).toBe(Code.Unauthenticated);
    }
  });
});

describe("the partnership list's exact filters", () => {
  it("find a partnership by its affiliate's email (normalized) or its referral code (any case)", async () => {
    const productId = await newProduct();
    const email = uniqueEmail();
    const { partnership } = await h.partners.registerAffiliate({
      productId,
      registration: { email, referralCode: `Code${Date.now().toString(36)}` },
      notify: false,
    });
    await h.partners.registerAffiliate({ productId, registration: { email: uniqueEmail() }, notify: false });
    const ids = async (filter: { email?: string; referralCode?: string }) =>
      (await h.partners.listPartnerships({ productId, pageSize: 10, ...filter })).partnerships.map((p) => p.id);
    expect(await ids({ email: `  ${email.toUpperCase()} ` })).toEqual([partnership?.id]);
    expect(await ids({ referralCode: partnership?.referralCode.toLowerCase() ?? "" })).toEqual([partnership?.id]);
    expect(await ids({ email: uniqueEmail() })).toEqual([]);
    expect(await ids({ referralCode: "nobody" })).toEqual([]);
    // Another product's affiliate is not found by its email.
    expect(await h.partners.listPartnerships({ productId: await newProduct(), pageSize: 10, email })).toMatchObject({
      partnerships: [],
    });
  });
});
