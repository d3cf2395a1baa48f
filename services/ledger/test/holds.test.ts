import { newId, type TransactionSql } from "@affiliate/platform";
import {
  CommissionAction,
  CommissionRefundedSchema,
  CommissionStatus,
  HoldReason,
  HoldResolution,
} from "@affiliate/proto/ledger";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveDueCommissions } from "../src/domain/approve-due-commissions.js";
import { settleCommissions, unlinkCommissions } from "../src/domain/payout-claims.js";
import {
  day,
  EventType,
  eventually,
  failure,
  type Harness,
  invariantViolations,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  unique,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

/** A sponsored payment of 100.00 (level 1: 20.00, level 2 at the program's tier-2 rate). */
async function payment(options: { holdDays?: number; productId?: string } = {}) {
  const productId = options.productId ?? (await newProduct(h, { holdDays: options.holdDays ?? 30 }));
  const sponsor = await newAffiliate(h, productId);
  const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
  const externalId = unique("pi");
  const { event } = await track(h, {
    productId,
    type: EventType.PAYMENT,
    referralCode: aff.code,
    amountCents: 10_000n,
    externalId,
    customerEmail: `${unique("c")}@example.com`,
    occurredAt: new Date(h.clock.now.getTime() - 1000),
  });
  const ids = (event?.commissions ?? []).map((c) => c.id);
  return { productId, externalId, partnershipId: aff.id, sponsorId: sponsor.id, ids };
}

type Payment = Awaited<ReturnType<typeof payment>>;

const hold = (p: Payment, holdId: string) =>
  h.ledger.holdPaymentCommissions({
    productId: p.productId,
    externalId: p.externalId,
    holdId,
    reason: HoldReason.DISPUTE,
  });

const release = (p: Payment, holdId: string, resolution: HoldResolution) =>
  h.ledger.releasePaymentCommissions({
    productId: p.productId,
    externalId: p.externalId,
    holdId,
    reason: HoldReason.DISPUTE,
    resolution,
    refundReason: resolution === HoldResolution.REFUNDED ? "dispute lost" : undefined,
  });

/** Each of the payment's commissions as [status, amount, hold reason, payout], level 1 first. */
async function stateOf(p: Payment) {
  const read = await Promise.all(
    p.ids.map(
      async (commissionId) => (await h.ledger.getCommission({ productId: p.productId, commissionId })).commission,
    ),
  );
  return read.map((c) => [
    CommissionStatus[c?.status ?? 0],
    Number(c?.amountCents),
    HoldReason[c?.holdReason ?? 0],
    c?.payoutId ?? "",
  ]);
}

const balancesOf = async (productId: string) =>
  (await h.ledger.listPayableBalances({ productId })).balances.map((b) => [b.partnershipId, Number(b.amountCents)]);

const claim = (productId: string, partnershipIds: string[]) =>
  h.ledger.claimCommissions({
    productId,
    claims: partnershipIds.map((partnershipId) => ({ partnershipId, payoutId: newId("po") })),
  });

const sweepAt = (at: Date) => approveDueCommissions(h.sql, at);

describe("a hold (a dispute opened)", () => {
  it("holds both levels: the sweep does not approve them after their hold period, and a won dispute lets it", async () => {
    const p = await payment({ holdDays: 30 });
    expect(p.ids).toHaveLength(2);
    const holdId = unique("dp");
    const held = await hold(p, holdId);
    expect(held.replayed).toBe(false);
    expect(held.commissions.map((c) => HoldReason[c.holdReason])).toEqual(["DISPUTE", "DISPUTE"]);

    const afterHoldPeriod = new Date(h.clock.now.getTime() + 31 * day);
    await sweepAt(afterHoldPeriod);
    expect(await stateOf(p)).toEqual([
      ["PENDING", 2000, "DISPUTE", ""],
      ["PENDING", 500, "DISPUTE", ""],
    ]);
    // The merchant cannot end the hold by approving while the dispute is open.
    const approving = await failure(
      h.ledger.updateCommission({
        productId: p.productId,
        commissionId: p.ids[0] ?? "",
        action: CommissionAction.APPROVE,
      }),
    );
    expect([approving?.code, approving?.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `Commission ${p.ids[0]} is held (dispute): it can be approved once the dispute closes`,
    ]);

    const won = await release(p, holdId, HoldResolution.LIFTED);
    expect([won.replayed, won.refund]).toEqual([false, undefined]);
    expect(await stateOf(p)).toEqual([
      ["PENDING", 2000, "UNSPECIFIED", ""],
      ["PENDING", 500, "UNSPECIFIED", ""],
    ]);
    await sweepAt(afterHoldPeriod);
    expect((await stateOf(p)).map(([status]) => status)).toEqual(["APPROVED", "APPROVED"]);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("an approved commission held is in no payable balance and no claim; lifted, the next claim takes it", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const disputed = await payment({ productId });
    const other = await payment({ productId });
    const holdId = unique("dp");
    await hold(disputed, holdId);
    expect(await balancesOf(productId)).toEqual(
      [
        [other.partnershipId, 2000],
        [other.sponsorId, 500],
      ].sort(([a], [b]) => String(a).localeCompare(String(b))),
    );
    const { commissions } = await claim(productId, [disputed.partnershipId, other.partnershipId]);
    expect(commissions.map((c) => c.commissionId)).toEqual([other.ids[0]]);
    expect(await stateOf(disputed)).toEqual([
      ["APPROVED", 2000, "DISPUTE", ""],
      ["APPROVED", 500, "DISPUTE", ""],
    ]);

    await release(disputed, holdId, HoldResolution.LIFTED);
    const next = await claim(productId, [disputed.partnershipId, disputed.sponsorId]);
    expect(next.commissions.map((c) => c.commissionId).sort()).toEqual([...disputed.ids].sort());
  });

  it("is idempotent by its id: a repeat, and a hold replayed after its release, change nothing", async () => {
    const p = await payment();
    const holdId = unique("dp");
    await hold(p, holdId);
    expect((await hold(p, holdId)).replayed).toBe(true);
    await release(p, holdId, HoldResolution.LIFTED);
    expect((await release(p, holdId, HoldResolution.LIFTED)).replayed).toBe(true);
    // A redelivered opening after the closing holds nothing again.
    expect((await hold(p, holdId)).replayed).toBe(true);
    expect((await stateOf(p)).map(([, , reason]) => reason)).toEqual(["UNSPECIFIED", "UNSPECIFIED"]);
    expect(await h.sql`select state from commission_holds where hold_id = ${holdId}`).toEqual([{ state: "released" }]);
  });

  it("a closing that arrives before its opening: the opening holds nothing", async () => {
    const p = await payment();
    const holdId = unique("dp");
    const won = await release(p, holdId, HoldResolution.LIFTED);
    expect(won.replayed).toBe(false);
    expect((await hold(p, holdId)).replayed).toBe(true);
    expect((await stateOf(p)).map(([, , reason]) => reason)).toEqual(["UNSPECIFIED", "UNSPECIFIED"]);
  });

  it("a second open dispute of the payment keeps the hold when the first closes", async () => {
    const p = await payment();
    const [first, second] = [unique("dp"), unique("dp")];
    await hold(p, first);
    await hold(p, second);
    await release(p, first, HoldResolution.LIFTED);
    expect((await stateOf(p)).map(([, , reason]) => reason)).toEqual(["DISPUTE", "DISPUTE"]);
    await release(p, second, HoldResolution.LIFTED);
    expect((await stateOf(p)).map(([, , reason]) => reason)).toEqual(["UNSPECIFIED", "UNSPECIFIED"]);
  });

  it("does not hold a commission already in a payout, nor a paid one", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const inPayout = await payment({ productId });
    const { commissions } = await claim(productId, [inPayout.partnershipId]);
    const payoutId = commissions[0]?.payoutId ?? "";
    const held = await hold(inPayout, unique("dp"));
    expect(held.commissions.map((c) => [c.id, HoldReason[c.holdReason]])).toEqual([
      [inPayout.ids[0], "UNSPECIFIED"],
      [inPayout.ids[1], "DISPUTE"],
    ]);

    const paid = await payment({ productId });
    const paidPayout = (await claim(productId, [paid.partnershipId])).commissions[0]?.payoutId ?? "";
    await h.sql.begin((tx) => settleCommissions(tx, productId, paidPayout));
    await hold(paid, unique("dp"));
    expect((await stateOf(paid))[0]).toEqual(["PAID", 2000, "UNSPECIFIED", paidPayout]);
    expect((await stateOf(inPayout))[0]).toEqual(["APPROVED", 2000, "UNSPECIFIED", payoutId]);
  });

  it("a commission unlinked from a rejected payout while its payment is disputed is held again", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const p = await payment({ productId });
    const payoutId = (await claim(productId, [p.partnershipId])).commissions[0]?.payoutId ?? "";
    const holdId = unique("dp");
    await hold(p, holdId);
    await h.ledger.releaseCommissions({ productId, payoutIds: [payoutId] });
    expect((await stateOf(p))[0]).toEqual(["APPROVED", 2000, "DISPUTE", ""]);
    expect((await claim(productId, [p.partnershipId])).commissions).toEqual([]);
    await release(p, holdId, HoldResolution.LIFTED);
    expect((await claim(productId, [p.partnershipId])).commissions.map((c) => c.commissionId)).toEqual([p.ids[0]]);
  });

  it("answers NOT_FOUND for an unknown payment, INVALID_ARGUMENT for a bad request, ALREADY_EXISTS for another payment's hold id", async () => {
    const p = await payment();
    const codeOf = async (call: Promise<unknown>) => (await failure(call))?.code;
    expect(await codeOf(hold({ ...p, externalId: unique("pi") }, unique("dp")))).toBe(Code.NotFound);
    expect(await codeOf(hold(p, ""))).toBe(Code.InvalidArgument);
    expect(
      await codeOf(
        h.ledger.holdPaymentCommissions({ productId: p.productId, externalId: p.externalId, holdId: unique("dp") }),
      ),
    ).toBe(Code.InvalidArgument);
    expect(
      await codeOf(
        h.ledger.releasePaymentCommissions({
          productId: p.productId,
          externalId: p.externalId,
          holdId: unique("dp"),
          reason: HoldReason.DISPUTE,
        }),
      ),
    ).toBe(Code.InvalidArgument);
    const holdId = unique("dp");
    await hold(p, holdId);
    const other = await payment({ productId: p.productId });
    expect(await codeOf(hold(other, holdId))).toBe(Code.AlreadyExists);
    expect((await stateOf(other)).map(([, , reason]) => reason)).toEqual(["UNSPECIFIED", "UNSPECIFIED"]);
  });
});

describe("a lost dispute", () => {
  it("refunds the payment in full: held commissions are voided and lifted, with commission.refunded; a repeat does nothing", async () => {
    const p = await payment();
    const holdId = unique("dp");
    await hold(p, holdId);
    const lost = await release(p, holdId, HoldResolution.REFUNDED);
    expect([lost.replayed, Number(lost.refund?.refundAmountCents), lost.refund?.fullyRefunded]).toEqual([
      false,
      10_000,
      true,
    ]);
    expect(await stateOf(p)).toEqual([
      ["REFUNDED", 0, "UNSPECIFIED", ""],
      ["REFUNDED", 0, "UNSPECIFIED", ""],
    ]);
    const again = await release(p, holdId, HoldResolution.REFUNDED);
    expect([again.replayed, again.refund]).toEqual([true, undefined]);
    const refunds = await h.sql`
      select r.amount_cents, r.reason from refunds r join tracking_events e on e.id = r.event_id
      where e.external_id = ${p.externalId}`;
    expect(refunds).toEqual([{ amountCents: 10_000, reason: "dispute lost" }]);
    // The events carry the commission without its hold (lifted in the same transaction).
    const events = await h.sql<{ payload: Uint8Array }[]>`
      select payload from outbox where subject like '%commission.refunded'
      order by seq desc limit 2`;
    const refunded = events.map((e) => fromBinary(CommissionRefundedSchema, e.payload));
    expect(refunded.map((e) => [e.commission?.id, HoldReason[e.commission?.holdReason ?? 0]]).sort()).toEqual(
      p.ids.map((id) => [id, "UNSPECIFIED"]).sort(),
    );
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("before its opening, refunds and leaves the late opening nothing to hold", async () => {
    const p = await payment();
    const holdId = unique("dp");
    expect(Number((await release(p, holdId, HoldResolution.REFUNDED)).refund?.refundAmountCents)).toBe(10_000);
    expect((await hold(p, holdId)).replayed).toBe(true);
    expect(await stateOf(p)).toEqual([
      ["REFUNDED", 0, "UNSPECIFIED", ""],
      ["REFUNDED", 0, "UNSPECIFIED", ""],
    ]);
  });

  it("on a payment partly refunded already refunds what remains; on one refunded in full, nothing", async () => {
    const p = await payment();
    await h.ledger.refund({
      productId: p.productId,
      identification: { case: "externalId", value: p.externalId },
      refundAmountCents: 2500n,
      requestFingerprint: "",
    });
    const lost = await release(p, unique("dp"), HoldResolution.REFUNDED);
    expect(Number(lost.refund?.refundAmountCents)).toBe(7500);
    const again = await release(p, unique("dp"), HoldResolution.REFUNDED);
    expect([again.replayed, again.refund]).toEqual([false, undefined]);
  });

  it("on a paid commission is a clawback: the commission is refunded after payment", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const p = await payment({ productId });
    const payoutId = (await claim(productId, [p.partnershipId])).commissions[0]?.payoutId ?? "";
    await h.sql.begin((tx) => settleCommissions(tx, productId, payoutId));
    const holdId = unique("dp");
    await hold(p, holdId);
    const lost = await release(p, holdId, HoldResolution.REFUNDED);
    expect(Number(lost.refund?.previousCommissionCents)).toBe(2000);
    expect((await stateOf(p))[0]).toEqual(["REFUNDED", 0, "UNSPECIFIED", payoutId]);
    const [event] = (
      await h.sql<{ payload: Uint8Array }[]>`
        select payload from outbox where subject like '%commission.refunded'
        order by seq desc limit 5`
    )
      .map((e) => fromBinary(CommissionRefundedSchema, e.payload))
      .filter((e) => e.commission?.id === p.ids[0]);
    expect([Number(event?.clawbackCents), event?.previousStatus]).toEqual([2000, CommissionStatus.PAID]);
  });
});

describe("holds under concurrency", () => {
  it("a hold racing claims: each commission is either claimed (and not held) or held (and not claimed)", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const payments: Payment[] = [];
    for (let i = 0; i < 12; i++) payments.push(await payment({ productId }));
    const partnershipIds = payments.flatMap((p) => [p.partnershipId, p.sponsorId]);
    const [claimed] = await Promise.all([
      claim(productId, partnershipIds),
      ...payments.map((p) => hold(p, unique("dp"))),
    ]);
    const inPayout = new Set(claimed.commissions.map((c) => c.commissionId));
    let held = 0;
    for (const p of payments) {
      for (const [index, [, , reason, payout]] of (await stateOf(p)).entries()) {
        const id = p.ids[index] ?? "";
        expect(reason === "DISPUTE" ? payout === "" && !inPayout.has(id) : payout !== "" && inPayout.has(id)).toBe(
          true,
        );
        if (reason === "DISPUTE") held += 1;
      }
    }
    expect(held + inPayout.size).toBe(payments.length * 2);
    expect(await h.sql`select id from commissions where hold_reason is not null and payout_id is not null`).toEqual([]);
  });

  /** Runs `work` in a transaction that stays open until the returned `commit` is called. */
  async function openTransaction(work: (tx: TransactionSql) => Promise<void>) {
    let commit = () => {};
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let ready = () => {};
    const worked = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const done = h.sql.begin(async (tx) => {
      await work(tx);
      ready();
      await committing;
    });
    await worked;
    return {
      async commit() {
        commit();
        await done;
      },
    };
  }

  /** Statements of this database waiting for a row lock and matching `pattern`. */
  const waiting = async (pattern: string) =>
    (
      await h.sql<{ n: number }[]>`
        select count(*)::int8 as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like ${pattern}`
    )[0]?.n ?? 0;

  it("a claim that waited for a hold's commit skips the commissions it held", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const p = await payment({ productId });
    // The hold's transaction, stopped after its writes: its row locks are held.
    const holding = await openTransaction(async (tx) => {
      await tx`select id from commissions where id in ${tx(p.ids)} for update`;
      await tx`update commissions set hold_reason = 'dispute' where id in ${tx(p.ids)}`;
    });
    const claiming = claim(productId, [p.partnershipId, p.sponsorId]);
    await eventually(async () => (await waiting("%update commissions c set payout_id%")) === 1);
    await holding.commit();
    expect((await claiming).commissions).toEqual([]);
  });

  it("a hold that waited for a claim's commit holds nothing the claim linked", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const p = await payment({ productId });
    const payoutId = newId("po");
    // The claim's transaction, stopped after linking the level-1 commission.
    const claiming = await openTransaction(async (tx) => {
      await tx`update commissions set payout_id = ${payoutId} where id = ${p.ids[0] ?? ""}`;
    });
    const holding = hold(p, unique("dp"));
    await eventually(async () => (await waiting("%for update of c%")) === 1);
    await claiming.commit();
    expect((await holding).commissions.map((c) => [HoldReason[c.holdReason], c.payoutId])).toEqual([
      ["UNSPECIFIED", payoutId],
      ["DISPUTE", ""],
    ]);
  });

  it("a hold racing the unlinking of a rejected payout never leaves the commission unheld and unlinked", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const payments: Payment[] = [];
    for (let i = 0; i < 8; i++) payments.push(await payment({ productId }));
    const { commissions } = await claim(
      productId,
      payments.map((p) => p.partnershipId),
    );
    const payoutIds = [...new Set(commissions.map((c) => c.payoutId))];
    await Promise.all([unlinkCommissions(h.sql, productId, payoutIds), ...payments.map((p) => hold(p, unique("dp")))]);
    for (const p of payments)
      expect((await stateOf(p)).map(([, , reason, payout]) => [reason, payout])).toEqual([
        ["DISPUTE", ""],
        ["DISPUTE", ""],
      ]);
  });
});
