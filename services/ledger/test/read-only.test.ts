import { collectMetrics, newId } from "@affiliate/platform";
import { CommissionAction, HoldReason } from "@affiliate/proto/ledger";
import { readOnlyRefusals, refusedThroughout, refusedUntilRestored } from "@affiliate/testing";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EventType,
  type Harness,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  trackBatch,
  unique,
} from "./harness.js";

/**
 * The ledger's write RPCs during a failover (issue 34): while its database refuses writes (a
 * pooled connection on an old primary turned standby answers SQLSTATE 25006), each write is run
 * again on a new connection and applied once when the primary takes writes again, or, when it
 * never does in time, answered UNAVAILABLE (a 503) having applied nothing. Never INTERNAL (a 500).
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const refusals = readOnlyRefusals(collectMetrics);
const pools = () => [
  { pool: h.sql, size: 8 },
  { pool: h.partnersSql, size: 4 },
];

/** A payment of 10,000 cents by a fresh affiliate, approved at once (no hold period). */
async function payment() {
  const productId = await newProduct(h, { holdDays: 0 });
  const affiliate = await newAffiliate(h, productId);
  const externalId = unique("ch");
  const { event } = await track(h, {
    productId,
    type: EventType.PAYMENT,
    referralCode: affiliate.code,
    amountCents: 10_000n,
    externalId,
    occurredAt: new Date(h.clock.now.getTime() - 1000),
  });
  return { productId, affiliate, externalId, commissionId: event?.commissions[0]?.id ?? "" };
}

const storedOnce = async (externalId: string) => {
  const [row] = await h.sql<{ events: number; commissions: number; refunds: number; refunded: number }[]>`
    select count(distinct e.id)::int as events, count(distinct c.id)::int as commissions,
           count(distinct r.id)::int as refunds, coalesce(max(e.refunded_cents), 0)::int as refunded
    from tracking_events e
    left join commissions c on c.event_id = e.id
    left join refunds r on r.event_id = e.id
    where e.external_id = ${externalId}`;
  return row;
};

describe("the ledger's writes while its database refuses them", () => {
  it("runs each write again on a new connection once the primary takes writes: every one applied once", async () => {
    const [keyed, unkeyed, updated, held, claimed, tracked] = await Promise.all(
      Array.from({ length: 6 }, () => payment()),
    );
    if (!keyed || !unkeyed || !updated || !held || !claimed || !tracked) throw new Error("fixtures");
    const newPayment = unique("ch");
    const batchedPayment = unique("ch");
    const payoutId = newId("po");

    const outcomes = await refusedUntilRestored<unknown>({
      databaseUrl: h.databaseUrl,
      pools: pools(),
      refusals,
      send: () => [
        track(h, {
          productId: tracked.productId,
          type: EventType.PAYMENT,
          referralCode: tracked.affiliate.code,
          amountCents: 5000n,
          externalId: newPayment,
        }),
        trackBatch(h, [
          {
            productId: tracked.productId,
            type: EventType.PAYMENT,
            referralCode: tracked.affiliate.code,
            amountCents: 5000n,
            externalId: batchedPayment,
          },
        ]),
        h.ledger.refund({
          productId: keyed.productId,
          identification: { case: "externalId", value: keyed.externalId },
          refundAmountCents: 1000n,
          idempotencyKey: unique("refund"),
        }),
        h.ledger.refund({
          productId: unkeyed.productId,
          identification: { case: "externalId", value: unkeyed.externalId },
          refundAmountCents: 1000n,
        }),
        h.ledger.updateCommission({
          productId: updated.productId,
          commissionId: updated.commissionId,
          action: CommissionAction.REJECT,
        }),
        h.ledger.holdPaymentCommissions({
          productId: held.productId,
          externalId: held.externalId,
          holdId: unique("dp"),
          reason: HoldReason.DISPUTE,
        }),
        h.ledger.claimCommissions({
          productId: claimed.productId,
          claims: [{ partnershipId: claimed.affiliate.id, payoutId }],
        }),
      ],
    });

    expect(outcomes.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual(
      Array(7).fill("ok"),
    );
    expect(await storedOnce(newPayment)).toMatchObject({ events: 1, commissions: 1 });
    expect(await storedOnce(batchedPayment)).toMatchObject({ events: 1, commissions: 1 });
    expect(await storedOnce(keyed.externalId)).toMatchObject({ refunds: 1, refunded: 1000 });
    expect(await storedOnce(unkeyed.externalId)).toMatchObject({ refunds: 1, refunded: 1000 });
    const [rejected] = await h.sql`select status from commissions where id = ${updated.commissionId}`;
    expect(rejected?.status).toBe("rejected");
    const [onHold] = await h.sql`select hold_reason from commissions where id = ${held.commissionId}`;
    expect(onHold?.holdReason).toBe("dispute");
    const [inPayout] = await h.sql`select payout_id from commissions where id = ${claimed.commissionId}`;
    expect(inPayout?.payoutId).toBe(payoutId);
  }, 60_000);

  it("answers UNAVAILABLE when the database refuses writes past the retries: nothing applied, the key free", async () => {
    const keyed = await payment();
    const key = unique("refund");
    const newPayment = unique("ch");
    const refund = () =>
      h.ledger.refund({
        productId: keyed.productId,
        identification: { case: "externalId", value: keyed.externalId },
        refundAmountCents: 1000n,
        idempotencyKey: key,
      });

    const outcomes = await refusedThroughout<unknown>({
      databaseUrl: h.databaseUrl,
      pools: pools(),
      refusals,
      send: () => [
        refund(),
        track(h, {
          productId: keyed.productId,
          type: EventType.PAYMENT,
          referralCode: keyed.affiliate.code,
          amountCents: 5000n,
          externalId: newPayment,
        }),
      ],
    });

    expect(outcomes.map((outcome) => outcome.status === "rejected" && ConnectError.from(outcome.reason).code)).toEqual([
      Code.Unavailable,
      Code.Unavailable,
    ]);
    expect(await storedOnce(keyed.externalId)).toMatchObject({ refunds: 0, refunded: 0 });
    expect((await storedOnce(newPayment))?.events).toBe(0);
    // The key was never reserved: the same request, repeated, applies now.
    expect((await refund()).result?.refundAmountCents).toBe(1000n);
    expect(await storedOnce(keyed.externalId)).toMatchObject({ refunds: 1, refunded: 1000 });
  }, 60_000);
});
