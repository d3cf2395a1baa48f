import { connectNats, ensureStream, newId, UndecodableEvent, wireSubject } from "@affiliate/platform";
import { type CommissionRefunded, CommissionRefundedSchema } from "@affiliate/proto/ledger";
import { PayoutAction, PayoutStatus } from "@affiliate/proto/payouts";
import { createTestNamespace } from "@affiliate/testing";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { refundChangesNothing } from "../src/domain/apply-commission-refund.js";
import { finishClaimedDrafts, recoverStaleDrafts } from "../src/domain/finish-drafts.js";
import { reserveDrafts } from "../src/domain/generate-payouts.js";
import {
  commissionRefundedDurable,
  consumeCommissionRefunds,
  decodeCommissionRefunded,
  handleCommissionRefunded,
} from "../src/events/commission-refunded.js";
import { adjustmentsOf, completedPayout, linksOf, pendingPayout } from "./fixtures.js";
import { eventually, type Harness, invariantViolations, outboxEvents, silentLogger, startHarness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  h.clock.offsetMs = 0;
  expect(await invariantViolations(h)).toEqual([]);
});
afterAll(() => h.close());

/** Runs the consumer's handler on an event inside a transaction, as the durable consumer does. */
const apply = (event: CommissionRefunded) =>
  h.sql.begin((tx) => handleCommissionRefunded(tx, { id: event.id, data: toBinary(CommissionRefundedSchema, event) }));

/** Whether the consumer acks the event without a transaction. */
const changesNothing = (event: CommissionRefunded) =>
  refundChangesNothing(decodeCommissionRefunded(event.id, toBinary(CommissionRefundedSchema, event)));

const payoutRow = async (payoutId: string) => {
  const [row] = await h.sql`select * from payouts where id = ${payoutId}`;
  return row;
};
const amountOf = async (productId: string, payoutId: string) =>
  (await h.payouts.getPayout({ productId, payoutId })).payout?.amountCents;

describe("a refund of a commission in an open payout", () => {
  it.each([
    ["pending", []],
    ["approved", [PayoutAction.APPROVE]],
    ["failed", [PayoutAction.APPROVE, PayoutAction.MARK_FAILED]],
  ] as const)("recalculates a %s payout", async (_status, steps) => {
    const { productId, payoutId, commissionIds } = await pendingPayout(h, [3000, 4000]);
    for (const action of steps) await h.payouts.updatePayout({ productId, payoutId, action });
    const [first] = commissionIds;
    const event = h.ledger.refund(first ?? "", { newAmountCents: 1500, paymentRefundedCents: 7500 });
    expect(changesNothing(event)).toBe(false);

    const outcome = await apply(event);

    expect(outcome).toEqual({ kind: "recalculated", payoutId });
    expect(await amountOf(productId, payoutId)).toBe(5500n);
    const links = await linksOf(h, payoutId);
    expect(links.find((l) => l.commissionId === first)).toMatchObject({
      amountCents: 1500,
      paymentRefundedCentsSeen: 7500,
    });
    expect(await adjustmentsOf(h, (await payoutRow(payoutId))?.partnershipId)).toEqual([]);
  });

  it("takes a full refund to 0 and keeps the commission linked", async () => {
    const { productId, payoutId, commissionIds } = await pendingPayout(h, [3000, 4000]);
    await apply(h.ledger.refund(commissionIds[1] ?? "", { newAmountCents: 0, paymentRefundedCents: 20_000 }));
    expect((await h.payouts.getPayout({ productId, payoutId })).payout).toMatchObject({
      amountCents: 3000n,
      commissionCount: 2n,
    });
  });

  it("ignores an older refund event that arrives after a newer one", async () => {
    const { productId, payoutId, commissionIds } = await pendingPayout(h, [8000]);
    const commission = commissionIds[0] ?? "";
    const older = h.ledger.refund(commission, { newAmountCents: 6000, paymentRefundedCents: 10_000 });
    const newer = h.ledger.refund(commission, { newAmountCents: 4000, paymentRefundedCents: 20_000 });

    await apply(newer);
    expect(await apply(older)).toEqual({ kind: "nothing" });

    expect(await amountOf(productId, payoutId)).toBe(4000n);
    expect(await linksOf(h, payoutId)).toMatchObject([{ amountCents: 4000, paymentRefundedCentsSeen: 20_000 }]);
  });

  it("ignores a refund the ledger applied before the claim: the claimed amount already has it", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 8000);
    const beforeClaim = h.ledger.refund(commission, { newAmountCents: 5000, paymentRefundedCents: 15_000 });
    const [payout] = (await h.payouts.generatePayouts({ productId })).payouts;
    expect(payout?.amountCents).toBe(5000n);

    // The event was delayed (a transient failure) and is applied only now.
    expect(await apply(beforeClaim)).toEqual({ kind: "nothing" });
    expect(await amountOf(productId, payout?.id ?? "")).toBe(5000n);
  });

  it("follows a refund that lands between a generation's claim and its finish", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 8000);
    const draft = { id: newId("po"), productId, partnershipId };
    await reserveDrafts(h.deps, [draft]);
    const claimed = await h.deps.ledger.claimCommissions(productId, [{ partnershipId, payoutId: draft.id }]);
    expect(claimed).toEqual([{ commissionId: commission, payoutId: draft.id, amountCents: 8000 }]);

    const outcome = await apply(h.ledger.refund(commission, { newAmountCents: 2000, paymentRefundedCents: 30_000 }));
    expect(outcome).toEqual({ kind: "recalculated", payoutId: draft.id });

    // The generation finishes (here: recovery) with the claim's older answer; the refund wins.
    h.clock.offsetMs = 31_000;
    expect(await recoverStaleDrafts(h.deps)).toBe(1);
    expect((await h.payouts.getPayout({ productId, payoutId: draft.id })).payout).toMatchObject({
      status: PayoutStatus.PENDING,
      amountCents: 2000n,
    });
    const [created] = await outboxEvents(h, draft.id);
    expect(created?.payout.amountCents).toBe(2000n);
  });

  it("follows a refund that waited for the draft's finish to commit", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 8000);
    const draft = { id: newId("po"), productId, partnershipId };
    await reserveDrafts(h.deps, [draft]);
    const claimed = await h.deps.ledger.claimCommissions(productId, [{ partnershipId, payoutId: draft.id }]);
    const event = h.ledger.refund(commission, { newAmountCents: 2000, paymentRefundedCents: 30_000 });

    // Queue the finish, then the refund, behind a lock on the draft; release it.
    const lockWaiters = async () =>
      (
        await h.sql`
        select count(*)::int8 as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`
      )[0]?.n;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const holder = h.sql.begin(async (tx) => {
      await tx`select id from payouts where id = ${draft.id} for update`;
      await held;
    });
    await eventually("the holder has the lock", async () => (await lockWaiters()) === 0);
    const finished = finishClaimedDrafts(h.deps, [draft], claimed, 1000n);
    await eventually("the finish waits", async () => (await lockWaiters()) === 1);
    const applied = apply(event);
    await eventually("the refund waits", async () => (await lockWaiters()) === 2);
    release();
    await holder;

    expect((await finished)[0]?.amountCents).toBe(8000n);
    expect(await applied).toEqual({ kind: "recalculated", payoutId: draft.id });
    expect(await amountOf(productId, draft.id)).toBe(2000n);
  });

  it("does nothing for a commission in no payout that was never paid", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 8000);
    const event = h.ledger.refund(commission, { newAmountCents: 0, paymentRefundedCents: 40_000 });
    // The consumer skips it without a transaction; applied anyway, it still changes nothing.
    expect(changesNothing(event)).toBe(true);
    expect(await apply(event)).toEqual({ kind: "nothing" });
    expect(await adjustmentsOf(h, partnershipId)).toEqual([]);
    expect(await h.sql`select id from payouts where product_id = ${productId}`).toEqual([]);
  });
});

describe("a refund of a commission already paid out", () => {
  it("leaves an unapplied adjustment for the next payout, which nets it; the completed payout never changes", async () => {
    const { productId, partnershipId, payoutId, commissionIds } = await completedPayout(h, [6000]);
    const completed = await payoutRow(payoutId);
    const event = h.ledger.refund(commissionIds[0] ?? "", { newAmountCents: 2000, paymentRefundedCents: 20_000 });
    expect(changesNothing(event)).toBe(false);

    const outcome = await apply(event);

    expect(outcome).toMatchObject({ kind: "clawed_back", payoutId: null });
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([
      { amountCents: -4000, payoutId: null, sourceEventId: event.id },
    ]);
    expect(await payoutRow(payoutId)).toEqual(completed);
    expect(await linksOf(h, payoutId)).toMatchObject([{ amountCents: 6000, paymentRefundedCentsSeen: 0 }]);

    // The next payout nets the clawback (payout.created: amount net, adjustment negative).
    h.ledger.add(productId, partnershipId, 9000);
    const [next] = (await h.payouts.generatePayouts({ productId })).payouts;
    expect(next).toMatchObject({ amountCents: 5000n, adjustmentCents: -4000n, commissionCount: 1n });
    const [created] = await outboxEvents(h, next?.id);
    expect(created?.payout).toMatchObject({ amountCents: 5000n, adjustmentCents: -4000n });
  });

  it("reduces the partnership's newest open payout instead, when there is one", async () => {
    const { productId, partnershipId, payoutId, commissionIds } = await completedPayout(h, [6000]);
    const completed = await payoutRow(payoutId);
    h.ledger.add(productId, partnershipId, 7000);
    const [open] = (await h.payouts.generatePayouts({ productId })).payouts;
    await h.payouts.updatePayout({ productId, payoutId: open?.id ?? "", action: PayoutAction.APPROVE });

    const outcome = await apply(
      h.ledger.refund(commissionIds[0] ?? "", { newAmountCents: 0, paymentRefundedCents: 30_000 }),
    );

    expect(outcome).toMatchObject({ kind: "clawed_back", payoutId: open?.id });
    expect((await h.payouts.getPayout({ productId, payoutId: open?.id ?? "" })).payout).toMatchObject({
      status: PayoutStatus.APPROVED,
      amountCents: 1000n,
      adjustmentCents: -6000n,
      commissionCount: 1n,
    });
    expect(await payoutRow(payoutId)).toEqual(completed);
  });

  it("claws back a commission of a completed payout the ledger has not marked paid yet", async () => {
    const { productId, partnershipId, payoutId, commissionIds } = await pendingPayout(h, [6000]);
    await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
    await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID });
    // The ledger has not consumed payout.completed yet: the refund sees an approved commission.
    const event = h.ledger.refund(commissionIds[0] ?? "", { newAmountCents: 1000, paymentRefundedCents: 25_000 });
    expect(event.clawbackCents).toBe(0n);

    expect(await apply(event)).toMatchObject({ kind: "clawed_back", payoutId: null });
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ amountCents: -5000, payoutId: null }]);
    expect(await amountOf(productId, payoutId)).toBe(6000n);
  });

  it("claws back each later refund once, whatever their order, and nothing for a refund the payout already had", async () => {
    const { productId, partnershipId, payoutId, commissionIds } = await pendingPayout(h, [9000]);
    const commission = commissionIds[0] ?? "";
    const first = h.ledger.refund(commission, { newAmountCents: 8000, paymentRefundedCents: 5000 });
    const second = h.ledger.refund(commission, { newAmountCents: 7000, paymentRefundedCents: 10_000 });
    // The second was applied while the payout was open: it is paid at 7000.
    await apply(second);
    await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
    await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID });
    h.ledger.settle(payoutId);
    const third = h.ledger.refund(commission, { newAmountCents: 5000, paymentRefundedCents: 20_000 });
    const fourth = h.ledger.refund(commission, { newAmountCents: 2000, paymentRefundedCents: 35_000 });

    await apply(fourth);
    await apply(third);
    // The first arrives late: the paid amount already had it.
    expect(await apply(first)).toEqual({ kind: "nothing" });
    // A redelivered event with the same id creates nothing (source_event_id is unique).
    expect(await apply(fourth)).toEqual({ kind: "nothing" });

    const adjustments = await adjustmentsOf(h, partnershipId);
    expect(adjustments.map((a) => a.amountCents).sort((a, b) => a - b)).toEqual([-3000, -2000]);
    expect(adjustments.map((a) => a.sourceEventId).sort()).toEqual([third.id, fourth.id].sort());
    expect(await amountOf(productId, payoutId)).toBe(7000n);
  });

  it("refuses an event it cannot decode, so the consumer terminates it", async () => {
    await expect(
      h.sql.begin((tx) => handleCommissionRefunded(tx, { id: newId("msg"), data: new Uint8Array([0xff, 0xff]) })),
    ).rejects.toBeInstanceOf(UndecodableEvent);
  });
});

describe("the durable consumer on JetStream", () => {
  it("applies commission.refunded once, even when the event is delivered again", async () => {
    const events = createTestNamespace();
    const nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "payouts-consumer-test");
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    const stream = await ensureStream(jsm, { service: "ledger", namespace: events.namespace });
    const options = { sql: h.sql, js, jsm, namespace: events.namespace, logger: silentLogger };
    let consumer = await consumeCommissionRefunds(options);
    try {
      const { partnershipId, payoutId, commissionIds } = await completedPayout(h, [6000]);
      const event = h.ledger.refund(commissionIds[0] ?? "", { newAmountCents: 0, paymentRefundedCents: 30_000 });
      const subject = wireSubject(events.namespace, "ledger.commission.refunded");
      await js.publish(subject, toBinary(CommissionRefundedSchema, event), { msgID: event.id });

      const [adjustment] = await eventually("the clawback", async () => {
        const rows = await adjustmentsOf(h, partnershipId);
        return rows.length > 0 ? rows : undefined;
      });
      expect(adjustment).toMatchObject({ amountCents: -6000, payoutId: null, sourceEventId: event.id });
      const applied = await h.sql`
        select event_id from applied_events where consumer = ${commissionRefundedDurable} and event_id = ${event.id}`;
      expect(applied).toHaveLength(1);

      // Redelivery: the durable consumer is recreated and the stream delivers the event again.
      await consumer.stop();
      await jsm.consumers.delete(stream, commissionRefundedDurable);
      consumer = await consumeCommissionRefunds(options);
      await eventually("the redelivery acked", async () => {
        const info = await jsm.consumers.info(stream, commissionRefundedDurable);
        return info.delivered.consumer_seq >= 1 && info.num_ack_pending === 0 && info.num_pending === 0;
      });

      expect(await adjustmentsOf(h, partnershipId)).toEqual([adjustment]);
      expect(await amountOf((await payoutRow(payoutId))?.productId, payoutId)).toBe(6000n);
    } finally {
      await consumer.stop();
      await nc.close();
      await events.cleanup();
    }
  });
});
