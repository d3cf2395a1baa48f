import { collectMetrics } from "@affiliate/platform";
import { PartnershipStatus } from "@affiliate/proto/partners";
import { readOnlyRefusals, refusedUntilRestored } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness, uniqueEmail } from "./harness.js";

/**
 * The partners service's write RPCs during a failover (issue 34): while its database refuses
 * writes (SQLSTATE 25006, a connection on an old primary turned standby), each write is run again
 * on a new connection and applied once the primary takes writes again. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function affiliate(productId: string) {
  const { partnership } = await h.partners.registerAffiliate({
    productId,
    registration: { email: uniqueEmail() },
    notify: false,
  });
  return partnership?.id ?? "";
}

describe("the partners service's writes while its database refuses them", () => {
  it("runs each write again on a new connection once the primary takes writes: every one applied once", async () => {
    const { product } = await h.admin.createProduct({ name: "Read only" });
    const productId = product?.id ?? "";
    const [removed = "", patched = "", minted = "", revoked = ""] = await Promise.all(
      [1, 2, 3, 4].map(() => affiliate(productId)),
    );
    await h.partners.mintAffiliateToken({ productId, partnershipId: revoked, ttlSeconds: 600 });
    const single = uniqueEmail();
    const bulk = uniqueEmail();

    const outcomes = await refusedUntilRestored<unknown>({
      databaseUrl: h.database.url,
      pools: [{ pool: h.sql, size: 5 }],
      refusals: readOnlyRefusals(collectMetrics),
      send: () => [
        h.admin.createProduct({ name: "Made during a failover" }),
        h.admin.rotateKeys({ productId }),
        h.partners.updateProgram({ productId, commissionRateBps: 2500 }),
        h.partners.registerAffiliate({ productId, registration: { email: single }, notify: false }),
        h.partners.bulkRegisterAffiliates({ productId, registrations: [{ email: bulk }], notify: false }),
        h.partners.updatePartnershipStatus({ productId, partnershipId: removed, status: PartnershipStatus.REMOVED }),
        h.partners.updatePartnership({
          productId,
          partnershipId: patched,
          externalIdChange: { case: "setExternalId", value: "during-failover" },
        }),
        h.partners.mintAffiliateToken({ productId, partnershipId: minted, ttlSeconds: 600 }),
        h.partners.revokeAffiliateTokens({ productId, partnershipId: revoked }),
      ],
    });

    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual(
      Array(9).fill("ok"),
    );
    const [products] = await h.sql<{ count: number }[]>`
      select count(*)::int as count from products where name = 'Made during a failover'`;
    expect(products?.count).toBe(1);
    const program = await h.partners.getProgram({ productId });
    expect(program.program?.commissionRateBps).toBe(2500);
    const [registered] = await h.sql<{ count: number }[]>`
      select count(*)::int as count from partnerships p join affiliates a on a.id = p.affiliate_id
      where p.product_id = ${productId} and a.email = any(${[single, bulk]})`;
    expect(registered?.count).toBe(2);
    const read = async (partnershipId: string) =>
      (await h.partners.getPartnership({ productId, partnershipId })).partnership;
    expect((await read(removed))?.status).toBe(PartnershipStatus.REMOVED);
    expect((await read(patched))?.externalId).toBe("during-failover");
  }, 60_000);
});
