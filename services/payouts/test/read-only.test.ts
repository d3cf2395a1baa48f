import { collectMetrics } from "@affiliate/platform";
import { PayoutAction, PayoutStatus } from "@affiliate/proto/payouts";
import { readOnlyRefusals, refusedUntilRestored } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pendingPayout } from "./fixtures.js";
import { type Harness, invariantViolations, startHarness } from "./harness.js";

/**
 * The payouts service's write RPCs during a failover (issue 34): while its database refuses
 * writes (SQLSTATE 25006, a connection on an old primary turned standby), each write is run again
 * on a new connection and applied once the primary takes writes again. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe("the payouts service's writes while its database refuses them", () => {
  it("runs each write again on a new connection once the primary takes writes: every one applied once", async () => {
    const pending = await pendingPayout(h);
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    h.ledger.add(productId, partnershipId, 7000);

    const outcomes = await refusedUntilRestored<unknown>({
      databaseUrl: h.databaseUrl,
      pools: [{ pool: h.sql, size: 8 }],
      refusals: readOnlyRefusals(collectMetrics),
      send: () => [
        h.payouts.generatePayouts({ productId }),
        h.payouts.updatePayout({
          productId: pending.productId,
          payoutId: pending.payoutId,
          action: PayoutAction.APPROVE,
        }),
      ],
    });

    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual([
      "ok",
      "ok",
    ]);
    const generated = await h.payouts.listPayouts({ productId, pageSize: 10, pageToken: "" });
    expect(generated.payouts.map((payout) => Number(payout.amountCents))).toEqual([7000]);
    const approved = await h.payouts.getPayout({ productId: pending.productId, payoutId: pending.payoutId });
    expect(approved.payout?.status).toBe(PayoutStatus.APPROVED);
    expect(await invariantViolations(h)).toEqual([]);
  }, 60_000);
});
