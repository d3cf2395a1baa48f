import { fieldErrorsOf } from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { PartnershipStatus } from "@affiliate/proto/partners";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, serviceClients, startHarness, uniqueEmail } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const newProduct = async (name = "Access") => (await h.admin.createProduct({ name })).product?.id ?? "";
const register = async (productId: string, extra: { externalId?: string; email?: string } = {}) => {
  const { partnership } = await h.partners.registerAffiliate({
    productId,
    registration: { email: extra.email ?? uniqueEmail(), externalId: extra.externalId },
    notify: false,
  });
  return partnership?.id ?? "";
};

/** The RPC's error code, or "ok" when it succeeded. */
async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

/** The payloads of the outbox rows of one subject, oldest first. */
async function outboxOf<T>(decode: (payload: Uint8Array) => T, subject: string): Promise<T[]> {
  const rows = await h.sql<
    { payload: Uint8Array }[]
  >`select payload from outbox where subject = ${subject} order by seq`;
  return rows.map((row) => decode(row.payload));
}

describe("external ids", () => {
  it("are set at registration, single and bulk, and found by the list filter", async () => {
    const productId = await newProduct();
    const single = await register(productId, { externalId: "user-1" });
    const bulk = await h.partners.bulkRegisterAffiliates({
      productId,
      registrations: [{ email: uniqueEmail(), externalId: "user-2" }, { email: uniqueEmail() }],
      notify: false,
    });
    const bulkId = bulk.results[0]?.result.case === "registered" ? bulk.results[0].result.value.partnershipId : "";
    const found = await h.partners.listPartnerships({ productId, externalId: "user-2", pageSize: 10, pageToken: "" });
    expect(found.partnerships.map((p) => [p.id, p.externalId])).toEqual([[bulkId, "user-2"]]);
    const read = await h.partners.getPartnership({ productId, partnershipId: single });
    expect(read.partnership?.externalId).toBe("user-1");
    const none = await h.partners.listPartnerships({ productId, externalId: "nobody", pageSize: 10, pageToken: "" });
    expect(none.partnerships).toEqual([]);
  });

  it("are unique per product: a taken one is ALREADY_EXISTS, the same one in another product is fine", async () => {
    const [productA, productB] = [await newProduct(), await newProduct()];
    await register(productA, { externalId: "dup" });
    expect(await codeOf(register(productA, { externalId: "dup" }))).toBe(Code.AlreadyExists);
    expect(await codeOf(register(productB, { externalId: "dup" }))).toBe("ok");

    const bulk = await h.partners.bulkRegisterAffiliates({
      productId: productA,
      registrations: [
        { email: uniqueEmail(), externalId: "dup" },
        { email: uniqueEmail(), externalId: "fresh" },
      ],
      notify: false,
    });
    expect(bulk.results.map((r) => r.result.case)).toEqual(["error", "registered"]);
    expect(bulk.results[0]?.result.value).toBe("External id is already used by another affiliate of this program");

    const other = await register(productA);
    const patch = h.partners.updatePartnership({
      productId: productA,
      partnershipId: other,
      externalIdChange: { case: "setExternalId", value: "dup" },
    });
    expect(await codeOf(patch)).toBe(Code.AlreadyExists);
  });

  it("are changed and removed by an update, and checked for length", async () => {
    const productId = await newProduct();
    const id = await register(productId, { externalId: "before" });
    const changed = await h.partners.updatePartnership({
      productId,
      partnershipId: id,
      externalIdChange: { case: "setExternalId", value: "after" },
    });
    expect(changed.partnership?.externalId).toBe("after");
    const cleared = await h.partners.updatePartnership({
      productId,
      partnershipId: id,
      externalIdChange: { case: "clearExternalId", value: true },
    });
    expect(cleared.partnership?.externalId).toBe("");
    try {
      await h.partners.updatePartnership({
        productId,
        partnershipId: id,
        externalIdChange: { case: "setExternalId", value: "x".repeat(129) },
      });
      expect.unreachable();
    } catch (error) {
      expect(fieldErrorsOf(ConnectError.from(error))?.fieldErrors).toEqual({
        external_id: ["External id must be 1-128 characters"],
      });
    }
    expect(await codeOf(register(productId, { externalId: "" }))).toBe(Code.InvalidArgument);
  });
});

describe("affiliate tokens", () => {
  it("are minted for active partnerships only and resolve to their partnership", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    const minted = await h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 600 });
    expect(minted.token).toMatch(/^apt_[A-Za-z0-9_-]{32}$/);
    if (!minted.expiresAt) throw new Error("minted without expires_at");
    const lifetime = timestampDate(minted.expiresAt).getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(500_000);
    expect(lifetime).toBeLessThanOrEqual(600_000);

    const resolved = await h.partners.authenticateAffiliateToken({ token: minted.token });
    expect([resolved.productId, resolved.partnershipId]).toEqual([productId, id]);
    // Only the hash is kept.
    const stored = await h.sql`select 1 from affiliate_tokens where token_hash::text like ${`%${minted.token}%`}`;
    expect(stored).toHaveLength(0);

    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.REMOVED });
    const refused = h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 600 });
    expect(await codeOf(refused)).toBe(Code.FailedPrecondition);
    const elsewhere = h.partners.mintAffiliateToken({
      productId: await newProduct(),
      partnershipId: id,
      ttlSeconds: 60,
    });
    expect(await codeOf(elsewhere)).toBe(Code.NotFound);
  });

  it("refuse a lifetime outside 60-86400 seconds", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    for (const ttlSeconds of [59, 86_401, 0]) {
      const call = h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds });
      expect(await codeOf(call)).toBe(Code.InvalidArgument);
    }
  });

  it("die at expiry", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    const { token } = await h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 60 });
    await h.sql`update affiliate_tokens set expires_at = now() - interval '1 second' where partnership_id = ${id}`;
    expect(await codeOf(h.partners.authenticateAffiliateToken({ token }))).toBe(Code.Unauthenticated);
  });

  it("die on revocation, which publishes tokens_revoked", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    const first = await h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 600 });
    const second = await h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 600 });
    const { revokedCount } = await h.partners.revokeAffiliateTokens({ productId, partnershipId: id });
    expect(revokedCount).toBe(2n);
    for (const { token } of [first, second]) {
      expect(await codeOf(h.partners.authenticateAffiliateToken({ token }))).toBe(Code.Unauthenticated);
    }
    const events = await outboxOf(
      (payload) => fromBinary(partnersEvents.partnershipTokensRevoked.schema, payload),
      partnersEvents.partnershipTokensRevoked.subject,
    );
    expect(events.filter((e) => e.partnershipId === id).map((e) => e.productId)).toEqual([productId]);
  });

  it("die for good when the partnership stops being active", async () => {
    const productId = await newProduct();
    const id = await register(productId);
    const { token } = await h.partners.mintAffiliateToken({ productId, partnershipId: id, ttlSeconds: 600 });
    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.REMOVED });
    expect(await codeOf(h.partners.authenticateAffiliateToken({ token }))).toBe(Code.Unauthenticated);
    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.ACTIVE });
    expect(await codeOf(h.partners.authenticateAffiliateToken({ token }))).toBe(Code.Unauthenticated);
  });

  it("refuse what is not a token", async () => {
    for (const token of ["", "apt_", "sk_live_abc", `apt_${"A".repeat(32)}`]) {
      expect(await codeOf(h.partners.authenticateAffiliateToken({ token }))).toBe(Code.Unauthenticated);
    }
  });
});

describe("sign-in by email", () => {
  const loginsOf = (partnershipId: string) =>
    h.sql<{ id: string }[]>`select id from affiliate_logins where partnership_id = ${partnershipId} order by id`;
  const requestedEvents = () =>
    outboxOf(
      (payload) => fromBinary(partnersEvents.affiliateLoginRequested.schema, payload),
      partnersEvents.affiliateLoginRequested.subject,
    );

  it("records a login and its event only for an active partnership's email", async () => {
    const productId = await newProduct();
    const email = uniqueEmail("login");
    const id = await register(productId, { email });
    const before = (await requestedEvents()).length;
    await h.partners.requestAffiliateLogin({ productId, email: ` ${email.toUpperCase()} ` });
    await h.partners.requestAffiliateLogin({ productId, email: uniqueEmail("nobody") });
    await h.partners.requestAffiliateLogin({ productId, email: "not an email" });
    await h.partners.requestAffiliateLogin({ productId: await newProduct(), email });
    const logins = await loginsOf(id);
    expect(logins).toHaveLength(1);
    const events = (await requestedEvents()).slice(before);
    expect(events.map((e) => [e.productId, e.partnershipId, e.loginId])).toEqual([[productId, id, logins[0]?.id]]);

    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.REMOVED });
    await h.partners.requestAffiliateLogin({ productId, email });
    expect(await loginsOf(id)).toHaveLength(1);
  });

  it("issues a code that buys a token once; a reissued code replaces the previous one", async () => {
    const productId = await newProduct("Acme Partners");
    const email = uniqueEmail("code");
    const id = await register(productId, { email });
    await h.partners.requestAffiliateLogin({ productId, email });
    const [login] = await loginsOf(id);
    const loginId = login?.id ?? "";

    const first = await h.partners.issueAffiliateLoginCode({ productId, loginId });
    const second = await h.partners.issueAffiliateLoginCode({ productId, loginId });
    expect(second.partnership?.affiliate?.email).toBe(email);
    expect(second.programName).toBe("Acme Partners");
    expect(await codeOf(h.partners.exchangeAffiliateLoginCode({ code: first.code }))).toBe(Code.Unauthenticated);

    const exchanged = await h.partners.exchangeAffiliateLoginCode({ code: second.code });
    const resolved = await h.partners.authenticateAffiliateToken({ token: exchanged.token });
    expect(resolved.partnershipId).toBe(id);
    expect(await codeOf(h.partners.exchangeAffiliateLoginCode({ code: second.code }))).toBe(Code.Unauthenticated);
    // Used: no further code is issued for it.
    expect(await codeOf(h.partners.issueAffiliateLoginCode({ productId, loginId }))).toBe(Code.FailedPrecondition);
    const otherProduct = h.partners.issueAffiliateLoginCode({ productId: await newProduct(), loginId });
    expect(await codeOf(otherProduct)).toBe(Code.NotFound);
  });

  it("refuses an expired code, and the code of a partnership no longer active", async () => {
    const productId = await newProduct();
    const email = uniqueEmail("late");
    const id = await register(productId, { email });
    await h.partners.requestAffiliateLogin({ productId, email });
    // A second request within the minute sends nothing; a minute later it does.
    await h.partners.requestAffiliateLogin({ productId, email });
    expect(await loginsOf(id)).toHaveLength(1);
    await h.sql`update affiliate_logins set created_at = now() - interval '61 seconds' where partnership_id = ${id}`;
    await h.partners.requestAffiliateLogin({ productId, email });
    const [expiring, deactivated] = (await loginsOf(id)).map((login) => login.id);
    const late = await h.partners.issueAffiliateLoginCode({ productId, loginId: expiring ?? "" });
    const removed = await h.partners.issueAffiliateLoginCode({ productId, loginId: deactivated ?? "" });
    await h.sql`update affiliate_logins set expires_at = now() - interval '1 second' where id = ${expiring ?? ""}`;
    expect(await codeOf(h.partners.exchangeAffiliateLoginCode({ code: late.code }))).toBe(Code.Unauthenticated);

    await h.partners.updatePartnershipStatus({ productId, partnershipId: id, status: PartnershipStatus.REMOVED });
    expect(await codeOf(h.partners.exchangeAffiliateLoginCode({ code: removed.code }))).toBe(Code.Unauthenticated);
    expect(await codeOf(h.partners.exchangeAffiliateLoginCode({ code: "" }))).toBe(Code.Unauthenticated);
  });

  it("gives a fresh code 15 minutes from the request", async () => {
    const productId = await newProduct();
    const email = uniqueEmail("expiry");
    const id = await register(productId, { email });
    const before = Date.now();
    await h.partners.requestAffiliateLogin({ productId, email });
    const after = Date.now();
    const [login] = await h.sql<{ id: string; expiresAt: Date }[]>`
      select id, expires_at from affiliate_logins where partnership_id = ${id}`;
    const expiresAt = login?.expiresAt.getTime() ?? 0;
    // Written from the service's clock between the two readings of ours: no tolerance beyond that.
    expect(expiresAt).toBeGreaterThanOrEqual(before + 15 * 60_000);
    expect(expiresAt).toBeLessThanOrEqual(after + 15 * 60_000);
    const issued = await h.partners.issueAffiliateLoginCode({ productId, loginId: login?.id ?? "" });
    expect(issued.expiresAt && timestampDate(issued.expiresAt).getTime()).toBe(expiresAt);
  });
});

describe("sign-in timing", () => {
  const floorMs = 200;

  it("answers a known and an unknown email alike: no sooner than the floor, and not much later", async () => {
    const { partners } = serviceClients(h.sql, { loginAnswerFloorMs: floorMs });
    const productId = await newProduct();
    const timed = async (email: string) => {
      const started = performance.now();
      await partners.requestAffiliateLogin({ productId, email });
      return performance.now() - started;
    };
    const known: number[] = [];
    const unknown: number[] = [];
    // Fresh known emails each round, so each does the whole work (lookup, login row, outbox row)
    // rather than stopping at "a sign-in was sent this minute".
    for (let round = 0; round < 3; round++) {
      const email = uniqueEmail("timed");
      const id = await register(productId, { email });
      known.push(await timed(email));
      unknown.push(await timed(uniqueEmail("stranger")));
      const logins = await h.sql`select id from affiliate_logins where partnership_id = ${id}`;
      expect(logins).toHaveLength(1);
    }
    // At least the floor: Node may fire a timer up to a millisecond early (its loop time is cached
    // per iteration), hence a 2 ms margin. At most the floor plus 1.5 s: generous for a loaded CI
    // machine, yet no answer may wait on the work in a way that tells the two apart by much.
    for (const duration of [...known, ...unknown]) {
      expect(duration).toBeGreaterThanOrEqual(floorMs - 2);
      expect(duration).toBeLessThan(floorMs + 1500);
    }
    for (const [round, duration] of known.entries()) {
      expect(Math.abs(duration - (unknown[round] ?? 0))).toBeLessThan(1500);
    }
  });
});
