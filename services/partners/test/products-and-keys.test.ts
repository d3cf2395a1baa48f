import { KeyMode } from "@affiliate/proto/partners";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKey } from "../src/domain/rules.js";
import { type Harness, startHarness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const codeOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return ConnectError.from(error).code;
  }
};

describe("products and keys", () => {
  it("creates a product with a live and a test key", async () => {
    const { product, keys } = await h.admin.createProduct({ name: "  Acme  " });
    expect(product?.id).toMatch(/^prd_[0-9a-f]{32}$/);
    expect(product?.name).toBe("Acme");
    expect(keys?.secretKey).toMatch(/^sk_live_[A-Za-z0-9]{33}$/);
    expect(keys?.testSecretKey).toMatch(/^sk_test_[A-Za-z0-9]{33}$/);
  });

  it("makes keys of letters and digits only, all different: a double-click selects a whole key", () => {
    const made = Array.from({ length: 2000 }, () => generateKey("live"));
    for (const key of made) expect(key).toMatch(/^sk_live_[A-Za-z0-9]{33}$/);
    expect(new Set(made).size).toBe(made.length);
    // All 62 characters turn up in 66,000 draws: none is left out of the alphabet.
    expect(new Set(made.map((key) => key.slice("sk_live_".length)).join("")).size).toBe(62);
  });

  it("stores keys only as hashes", async () => {
    const { keys } = await h.admin.createProduct({ name: "Hashed" });
    const rows = await h.sql`select key_hash from api_keys`;
    const stored = rows.map((row) => Buffer.from(row.keyHash as Uint8Array).toString("utf8"));
    expect(stored.some((value) => value.includes(keys?.secretKey ?? "missing"))).toBe(false);
    expect(rows.every((row) => (row.keyHash as Uint8Array).length === 32)).toBe(true);
  });

  it("rejects an empty or overlong product name", async () => {
    expect(await codeOf(h.admin.createProduct({ name: "  " }))).toBe(Code.InvalidArgument);
    expect(await codeOf(h.admin.createProduct({ name: "x".repeat(201) }))).toBe(Code.InvalidArgument);
  });

  it("authenticates live and test keys to their product and mode", async () => {
    const { product, keys } = await h.admin.createProduct({ name: "Auth" });
    expect(await h.partners.authenticate({ apiKey: keys?.secretKey ?? "" })).toMatchObject({
      productId: product?.id,
      mode: KeyMode.LIVE,
    });
    expect(await h.partners.authenticate({ apiKey: keys?.testSecretKey ?? "" })).toMatchObject({
      productId: product?.id,
      mode: KeyMode.TEST,
    });
  });

  it("refuses unknown keys as unauthenticated", async () => {
    expect(await codeOf(h.partners.authenticate({ apiKey: "sk_live_unknown" }))).toBe(Code.Unauthenticated);
  });

  it("rotation revokes the old keys at once and issues working new ones", async () => {
    const { product, keys: old } = await h.admin.createProduct({ name: "Rotate" });
    const { keys: fresh } = await h.admin.rotateKeys({ productId: product?.id ?? "" });
    expect(fresh?.secretKey).not.toBe(old?.secretKey);
    expect(await codeOf(h.partners.authenticate({ apiKey: old?.secretKey ?? "" }))).toBe(Code.Unauthenticated);
    expect(await codeOf(h.partners.authenticate({ apiKey: old?.testSecretKey ?? "" }))).toBe(Code.Unauthenticated);
    expect((await h.partners.authenticate({ apiKey: fresh?.secretKey ?? "" })).productId).toBe(product?.id);
  });

  it("rotation writes a keys-rotated event in the same transaction", async () => {
    const { product } = await h.admin.createProduct({ name: "Rotate event" });
    await h.admin.rotateKeys({ productId: product?.id ?? "" });
    const rows = await h.sql`select subject from outbox where subject = 'partners.product.keys_rotated'`;
    expect(rows.length).toBeGreaterThanOrEqual(1);
  });

  it("rotating an unknown product is not found", async () => {
    expect(await codeOf(h.admin.rotateKeys({ productId: "prd_missing" }))).toBe(Code.NotFound);
  });

  it("lists products newest first", async () => {
    const first = await h.admin.createProduct({ name: "Older" });
    const second = await h.admin.createProduct({ name: "Newer" });
    const { products } = await h.admin.listProducts({});
    const ids = products.map((p) => p.id);
    expect(ids.indexOf(second.product?.id ?? "")).toBeLessThan(ids.indexOf(first.product?.id ?? ""));
  });
});

describe("program settings", () => {
  it("starts with the contract's defaults", async () => {
    const { product } = await h.admin.createProduct({ name: "Defaults" });
    const { program } = await h.partners.getProgram({ productId: product?.id ?? "" });
    expect(program).toMatchObject({
      productId: product?.id,
      name: "Defaults",
      commissionRateBps: 2000,
      tier2RateBps: 500,
      holdDays: 30,
      payoutMinimumCents: 5000n,
      attributionWindowDays: 60,
      autoApprove: true,
      currency: "usd",
    });
  });

  it("changes only the fields that are set", async () => {
    const { product } = await h.admin.createProduct({ name: "Partial" });
    const { program } = await h.partners.updateProgram({
      productId: product?.id ?? "",
      holdDays: 0,
      autoApprove: false,
    });
    expect(program).toMatchObject({ holdDays: 0, autoApprove: false, commissionRateBps: 2000, tier2RateBps: 500 });
  });

  it("refuses out-of-range values and changes nothing", async () => {
    const { product } = await h.admin.createProduct({ name: "Ranges" });
    const productId = product?.id ?? "";
    for (const change of [
      { commissionRateBps: 10_001 },
      { tier2RateBps: -1 },
      { holdDays: 366 },
      { attributionWindowDays: 0 },
      { payoutMinimumCents: -1n },
    ]) {
      expect(await codeOf(h.partners.updateProgram({ productId, holdDays: 5, ...change }))).toBe(Code.InvalidArgument);
    }
    expect((await h.partners.getProgram({ productId })).program?.holdDays).toBe(30);
  });

  it("answers not found for an unknown product", async () => {
    expect(await codeOf(h.partners.getProgram({ productId: "prd_missing" }))).toBe(Code.NotFound);
    expect(await codeOf(h.partners.updateProgram({ productId: "prd_missing", holdDays: 1 }))).toBe(Code.NotFound);
  });
});
