import { newId } from "@affiliate/platform";
import { PayoutStatus } from "@affiliate/proto/payouts";
import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { payoutBatchSize, recoverStaleDrafts } from "../src/domain/finish-drafts.js";
import { reserveDrafts } from "../src/domain/generate-payouts.js";
import { runScheduledGeneration } from "../src/domain/scheduled-generation.js";
import { adjustmentsOf, linksOf, unappliedAdjustment } from "./fixtures.js";
import {
  failure,
  type Harness,
  invariantViolations,
  outboxEvents,
  PartnershipStatus,
  startHarness,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterEach(async () => {
  h.clock.offsetMs = 0;
  h.ledger.beforeBalances = async () => {};
  h.ledger.beforeClaim = async () => {};
  expect(await invariantViolations(h)).toEqual([]);
});
afterAll(() => h.close());

const linksOfPayouts = async (payoutIds: string[]) =>
  h.sql`select commission_id from payout_commissions where payout_id = any(${payoutIds}::text[])`;

const payoutsOf = async (productId: string) =>
  h.sql<{ id: string; partnershipId: string; status: string; amountCents: number }[]>`
    select id, partnership_id, status, amount_cents from payouts where product_id = ${productId} order by id`;

describe("generating payouts", () => {
  it("sums a payout's commissions exactly past 2^53 (contract section 11)", async () => {
    const productId = h.partners.product(5000);
    const partnership = h.partners.partnership(productId);
    // Each is exact as a number; their sum, 12,000,000,000,000,003, is not.
    for (let i = 0; i < 3; i++) h.ledger.add(productId, partnership, 4_000_000_000_000_001);
    const { payouts } = await h.payouts.generatePayouts({ productId });
    expect(payouts).toMatchObject([{ amountCents: 12_000_000_000_000_003n, commissionCount: 3n }]);
    const { payout } = await h.payouts.getPayout({ productId, payoutId: payouts[0]?.id ?? "" });
    expect(payout?.amountCents).toBe(12_000_000_000_000_003n);
  });

  it("creates one pending payout per active partnership reaching the minimum, net of unapplied adjustments", async () => {
    const productId = h.partners.product(5000);
    const plain = h.partners.partnership(productId);
    const belowMinimum = h.partners.partnership(productId);
    const removed = h.partners.partnership(productId, PartnershipStatus.REMOVED);
    const pendingApproval = h.partners.partnership(productId, PartnershipStatus.PENDING);
    const netted = h.partners.partnership(productId);
    const nettedBelow = h.partners.partnership(productId);
    const onlyAdjustments = h.partners.partnership(productId);

    const plainCommissions = [h.ledger.add(productId, plain, 3000), h.ledger.add(productId, plain, 4000)];
    h.ledger.add(productId, plain, 9000, "pending"); // still in its hold: not payable
    h.ledger.add(productId, belowMinimum, 4999);
    h.ledger.add(productId, removed, 9000);
    h.ledger.add(productId, pendingApproval, 9000);
    const nettedCommission = h.ledger.add(productId, netted, 8000);
    const nettedAdjustment = await unappliedAdjustment(h, productId, netted, -2000);
    h.ledger.add(productId, nettedBelow, 6000);
    await unappliedAdjustment(h, productId, nettedBelow, -1500);
    await unappliedAdjustment(h, productId, onlyAdjustments, -500);

    const { payouts } = await h.payouts.generatePayouts({ productId });

    expect(payouts.map((p) => p.partnershipId).sort()).toEqual([plain, netted].sort());
    const plainPayout = payouts.find((p) => p.partnershipId === plain);
    const nettedPayout = payouts.find((p) => p.partnershipId === netted);
    expect(plainPayout).toMatchObject({
      productId,
      status: PayoutStatus.PENDING,
      amountCents: 7000n,
      adjustmentCents: 0n,
      commissionCount: 2n,
      gatewayTransferId: "",
    });
    expect(plainPayout?.id).toMatch(/^po_[0-9a-f]{32}$/);
    expect(plainPayout?.createdAt).toBeDefined();
    expect(plainPayout?.approvedAt).toBeUndefined();
    expect(nettedPayout).toMatchObject({
      status: PayoutStatus.PENDING,
      amountCents: 6000n,
      adjustmentCents: -2000n,
      commissionCount: 1n,
    });

    // The ledger linked exactly the payable commissions; the links hold their amounts.
    expect(h.ledger.linkedTo(plainPayout?.id ?? "").sort()).toEqual([...plainCommissions].sort());
    expect(h.ledger.linkedTo(nettedPayout?.id ?? "")).toEqual([nettedCommission]);
    expect((await linksOf(h, plainPayout?.id ?? "")).map((l) => l.amountCents).sort()).toEqual([3000, 4000]);
    // The adjustment went into the payout; the others stay unapplied for a later payout.
    expect(await adjustmentsOf(h, netted)).toMatchObject([{ id: nettedAdjustment, payoutId: nettedPayout?.id }]);
    expect(await adjustmentsOf(h, nettedBelow)).toMatchObject([{ payoutId: null }]);
    expect(await adjustmentsOf(h, onlyAdjustments)).toMatchObject([{ payoutId: null }]);

    // payout.created carries the net amount and the (negative) adjustment sum.
    const events = await outboxEvents(h);
    const created = events.filter((e) => payouts.some((p) => p.id === e.payout.id));
    expect(created.map((e) => e.subject)).toEqual(["payouts.payout.created", "payouts.payout.created"]);
    expect(created.find((e) => e.payout.id === nettedPayout?.id)?.payout).toMatchObject({
      amountCents: 6000n,
      adjustmentCents: -2000n,
      status: PayoutStatus.PENDING,
      partnershipId: netted,
    });

    // Readable as created; a second run finds nothing left to pay.
    const { payout } = await h.payouts.getPayout({ productId, payoutId: plainPayout?.id ?? "" });
    expect(payout).toEqual(plainPayout);
    expect((await h.payouts.generatePayouts({ productId })).payouts).toEqual([]);
    expect(await payoutsOf(productId)).toHaveLength(2);
  });

  it("skips a zero or negative net even when the minimum is 0", async () => {
    const productId = h.partners.product(0);
    const zero = h.partners.partnership(productId);
    const negative = h.partners.partnership(productId);
    const oneCent = h.partners.partnership(productId);
    h.ledger.add(productId, zero, 1000);
    await unappliedAdjustment(h, productId, zero, -1000);
    h.ledger.add(productId, negative, 500);
    await unappliedAdjustment(h, productId, negative, -800);
    h.ledger.add(productId, oneCent, 1);

    const { payouts } = await h.payouts.generatePayouts({ productId });

    expect(payouts.map((p) => [p.partnershipId, p.amountCents])).toEqual([[oneCent, 1n]]);
    expect(await adjustmentsOf(h, zero)).toMatchObject([{ payoutId: null }]);
    expect(await adjustmentsOf(h, negative)).toMatchObject([{ payoutId: null }]);
    expect(await payoutsOf(productId)).toHaveLength(1);
  });

  it("asks partners about candidates in batches of at most 100", async () => {
    const productId = h.partners.product(100);
    const ids = Array.from({ length: 101 }, () => h.partners.partnership(productId));
    for (const id of ids) h.ledger.add(productId, id, 100);
    h.partners.batchSizes.length = 0;

    const { payouts } = await h.payouts.generatePayouts({ productId });

    expect(payouts).toHaveLength(101);
    expect(h.partners.batchSizes).toEqual([100, 1]);
  });

  it("answers NOT_FOUND for an unknown product, like partners does", async () => {
    const error = await failure(h.payouts.generatePayouts({ productId: "prd_unknown" }));
    expect(error?.code).toBe(Code.NotFound);
  });

  it("drops a payout whose commissions changed below the minimum while it was being made", async () => {
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 6000);
    const adjustment = await unappliedAdjustment(h, productId, partnershipId, -500);
    const unlinkedBefore = h.ledger.unlinked.length;
    // Between the balances and the claim, a refund cuts the commission.
    h.ledger.beforeClaim = async () => {
      h.ledger.refund(commission, { newAmountCents: 3000, paymentRefundedCents: 15_000 });
    };

    const { payouts } = await h.payouts.generatePayouts({ productId });

    expect(payouts).toEqual([]);
    expect(await payoutsOf(productId)).toEqual([]);
    // Released at the ledger, adjustments free again, nothing owed.
    expect(h.ledger.get(commission).payoutId).toBe("");
    const released = h.ledger.unlinked.slice(unlinkedBefore);
    expect(released).toHaveLength(1);
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ id: adjustment, payoutId: null }]);
    expect(await h.sql`select payout_id from pending_releases`).toEqual([]);
    expect(await outboxEvents(h, released[0])).toEqual([]);
  });
});

describe("generating in batches", () => {
  it("creates one payout per partnership over several batches, each with its own sums and event", async () => {
    const productId = h.partners.product(100);
    const count = payoutBatchSize * 2 + 1;
    const partnerships = Array.from({ length: count }, () => h.partners.partnership(productId));
    // Amounts differ per partnership; every third also nets an adjustment.
    const expected = new Map<string, { amountCents: number; adjustmentCents: number; commissions: string[] }>();
    for (const [i, partnershipId] of partnerships.entries()) {
      const commissions = [h.ledger.add(productId, partnershipId, 1000 + i)];
      if (i % 2 === 0) commissions.push(h.ledger.add(productId, partnershipId, 500));
      const adjustmentCents = i % 3 === 0 ? -300 : 0;
      if (adjustmentCents) await unappliedAdjustment(h, productId, partnershipId, adjustmentCents);
      const commissionCents = 1000 + i + (i % 2 === 0 ? 500 : 0);
      expected.set(partnershipId, { amountCents: commissionCents + adjustmentCents, adjustmentCents, commissions });
    }
    h.ledger.claimSizes.length = 0;

    const { payouts } = await h.payouts.generatePayouts({ productId });

    // One claim call per batch, never more than a batch. Two batches are in flight at once, so
    // the last (small) one may claim before the second: the sizes are compared, not their order.
    expect([...h.ledger.claimSizes].sort((a, b) => b - a)).toEqual([payoutBatchSize, payoutBatchSize, 1]);
    expect(payouts.map((p) => p.partnershipId)).toEqual([...partnerships].sort());
    for (const payout of payouts) {
      const want = expected.get(payout.partnershipId);
      expect(payout).toMatchObject({
        status: PayoutStatus.PENDING,
        amountCents: BigInt(want?.amountCents ?? 0),
        adjustmentCents: BigInt(want?.adjustmentCents ?? 0),
        commissionCount: BigInt(want?.commissions.length ?? 0),
      });
      expect(h.ledger.linkedTo(payout.id).sort()).toEqual([...(want?.commissions ?? [])].sort());
    }
    const events = await outboxEvents(h);
    const created = new Map(events.filter((e) => e.payout.productId === productId).map((e) => [e.payout.id, e]));
    expect(created.size).toBe(count);
    for (const payout of payouts) {
      expect(created.get(payout.id)).toMatchObject({
        subject: "payouts.payout.created",
        payout: { amountCents: payout.amountCents },
      });
    }
    expect(await h.sql`select id from payouts where product_id = ${productId} and status = 'draft'`).toEqual([]);
  });

  it("drops only the payouts of a batch that no longer qualify, frees their adjustments and unlinks their claims", async () => {
    const productId = h.partners.product(5000);
    const [kept, cut, cutWithAdjustment, alsoKept] = [0, 1, 2, 3].map(() => h.partners.partnership(productId));
    const keptCommission = h.ledger.add(productId, kept ?? "", 6000);
    const cutCommission = h.ledger.add(productId, cut ?? "", 6000);
    const cutWithAdjustmentCommission = h.ledger.add(productId, cutWithAdjustment ?? "", 7000);
    const adjustment = await unappliedAdjustment(h, productId, cutWithAdjustment ?? "", -1000);
    h.ledger.add(productId, alsoKept ?? "", 9000);
    const unlinkedBefore = h.ledger.unlinked.length;
    const unlinkCallsBefore = h.ledger.unlinkCalls.length;
    // Between the balances and the claim, refunds cut two of the four below the minimum.
    h.ledger.beforeClaim = async () => {
      h.ledger.refund(cutCommission, { newAmountCents: 4000, paymentRefundedCents: 10_000 });
      h.ledger.refund(cutWithAdjustmentCommission, { newAmountCents: 5500, paymentRefundedCents: 7_500 });
    };

    const { payouts } = await h.payouts.generatePayouts({ productId });

    expect(h.ledger.claimSizes.at(-1)).toBe(4);
    expect(payouts.map((p) => [p.partnershipId, p.amountCents]).sort()).toEqual(
      [
        [kept, 6000n],
        [alsoKept, 9000n],
      ].sort(),
    );
    expect((await payoutsOf(productId)).map((p) => p.partnershipId).sort()).toEqual([kept, alsoKept].sort());
    // The dropped drafts' claims were unlinked at the ledger, once each, in one call; nothing is owed.
    const released = h.ledger.unlinked.slice(unlinkedBefore);
    expect(released).toHaveLength(2);
    expect(h.ledger.unlinkCalls.slice(unlinkCallsBefore)).toEqual([expect.arrayContaining(released)]);
    expect(payouts.some((p) => released.includes(p.id))).toBe(false);
    expect(h.ledger.get(cutCommission).payoutId).toBe("");
    expect(h.ledger.get(cutWithAdjustmentCommission).payoutId).toBe("");
    expect(h.ledger.get(keptCommission).payoutId).toBe(payouts.find((p) => p.partnershipId === kept)?.id);
    expect(await adjustmentsOf(h, cutWithAdjustment ?? "")).toMatchObject([{ id: adjustment, payoutId: null }]);
    expect(await h.sql`select payout_id from pending_releases`).toEqual([]);
    for (const id of released) expect(await outboxEvents(h, id)).toEqual([]);
    expect(await linksOfPayouts(released)).toEqual([]);
  });
});

describe("concurrent generation", () => {
  it("puts every commission and adjustment in exactly one payout", async () => {
    const productId = h.partners.product(1000);
    const partnerships = [h.partners.partnership(productId), h.partners.partnership(productId)];
    const commissions = partnerships.flatMap((p) => [
      h.ledger.add(productId, p, 2000),
      h.ledger.add(productId, p, 3000),
    ]);
    const [withAdjustment] = partnerships;
    await unappliedAdjustment(h, productId, withAdjustment ?? "", -700);
    // Both calls read the same balances before either claims, so both try every partnership.
    const unlinkedBefore = h.ledger.unlinked.length;
    let arrived = 0;
    let release: () => void = () => {};
    const bothRead = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.ledger.beforeBalances = async () => {
      arrived += 1;
      if (arrived === 2) release();
      await bothRead;
    };

    const [first, second] = await Promise.all([
      h.payouts.generatePayouts({ productId }),
      h.payouts.generatePayouts({ productId }),
    ]);

    const created = [...first.payouts, ...second.payouts];
    // Both calls raced for both partnerships: each lost race left a draft that was dropped and unlinked.
    expect(h.ledger.unlinked.length - unlinkedBefore).toBe(2);
    expect(created.map((p) => p.partnershipId).sort()).toEqual([...partnerships].sort());
    const stored = await payoutsOf(productId);
    expect(stored.map((p) => p.id).sort()).toEqual(created.map((p) => p.id).sort());
    expect(stored.every((p) => p.status === "pending")).toBe(true);
    // Every commission is linked once, here and at the ledger, to a payout that exists.
    const links = await h.sql<{ commissionId: string; payoutId: string }[]>`
      select commission_id, payout_id from payout_commissions where payout_id in ${h.sql(stored.map((p) => p.id))}`;
    expect(links.map((l) => l.commissionId).sort()).toEqual([...commissions].sort());
    for (const link of links) expect(h.ledger.get(link.commissionId).payoutId).toBe(link.payoutId);
    // The adjustment is in at most one payout; if the payout that got it lost the commissions, it is free again.
    const [adjustment] = await adjustmentsOf(h, withAdjustment ?? "");
    expect(adjustment?.payoutId === null || stored.some((p) => p.id === adjustment?.payoutId)).toBe(true);
    expect(await h.sql`select id from payouts where status = 'draft'`).toEqual([]);
    expect(await h.sql`select payout_id from pending_releases`).toEqual([]);
  });
});

describe("draft recovery", () => {
  it("finishes a generation that stopped between the claim and the finish", async () => {
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    const commissions = [h.ledger.add(productId, partnershipId, 4000), h.ledger.add(productId, partnershipId, 2500)];
    const adjustment = await unappliedAdjustment(h, productId, partnershipId, -1000);
    const draft = { id: newId("po"), productId, partnershipId };
    await reserveDrafts(h.deps, [draft]);
    await h.deps.ledger.claimCommissions(productId, [{ partnershipId, payoutId: draft.id }]);
    // ...and the process died here.

    // A draft is invisible to every RPC.
    expect((await failure(h.payouts.getPayout({ productId, payoutId: draft.id })))?.code).toBe(Code.NotFound);
    expect((await h.payouts.listPayouts({ productId, pageSize: 10 })).payouts).toEqual([]);
    // A young draft may still be finished by its generation: recovery leaves it alone.
    expect(await recoverStaleDrafts(h.deps)).toBe(0);

    h.clock.offsetMs = 31_000;
    expect(await recoverStaleDrafts(h.deps)).toBe(1);

    const { payout } = await h.payouts.getPayout({ productId, payoutId: draft.id });
    expect(payout).toMatchObject({
      status: PayoutStatus.PENDING,
      amountCents: 5500n,
      adjustmentCents: -1000n,
      commissionCount: 2n,
    });
    expect(h.ledger.linkedTo(draft.id).sort()).toEqual([...commissions].sort());
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ id: adjustment, payoutId: draft.id }]);
    expect((await outboxEvents(h, draft.id)).map((e) => e.subject)).toEqual(["payouts.payout.created"]);
    // Nothing left to recover.
    expect(await recoverStaleDrafts(h.deps)).toBe(0);
  });

  it("claims for a draft that never reached the ledger, at the start of the next generation", async () => {
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 7000);
    const draft = { id: newId("po"), productId, partnershipId };
    await reserveDrafts(h.deps, [draft]);

    h.clock.offsetMs = 31_000;
    const { payouts } = await h.payouts.generatePayouts({ productId });

    // The recovered payout existed before this call: the call created nothing new.
    expect(payouts).toEqual([]);
    expect((await h.payouts.getPayout({ productId, payoutId: draft.id })).payout).toMatchObject({
      status: PayoutStatus.PENDING,
      amountCents: 7000n,
    });
    expect(h.ledger.get(commission).payoutId).toBe(draft.id);
    expect(await payoutsOf(productId)).toHaveLength(1);
  });

  it("deletes a recovered draft left with nothing, frees its adjustments and unlinks its claim", async () => {
    const productId = h.partners.product(5000);
    const partnershipId = h.partners.partnership(productId);
    const commission = h.ledger.add(productId, partnershipId, 7000);
    const adjustment = await unappliedAdjustment(h, productId, partnershipId, -300);
    const stale = { id: newId("po"), productId, partnershipId };
    await reserveDrafts(h.deps, [stale]);
    // Meanwhile another generation got the commission.
    const { payouts } = await h.payouts.generatePayouts({ productId });
    expect(payouts.map((p) => p.amountCents)).toEqual([7000n]);

    h.clock.offsetMs = 31_000;
    expect(await recoverStaleDrafts(h.deps)).toBe(1);

    expect(await payoutsOf(productId)).toMatchObject([{ id: payouts[0]?.id, status: "pending" }]);
    expect(await adjustmentsOf(h, partnershipId)).toMatchObject([{ id: adjustment, payoutId: null }]);
    expect(h.ledger.unlinked).toContain(stale.id);
    expect(h.ledger.get(commission).payoutId).toBe(payouts[0]?.id);
    expect(await h.sql`select payout_id from pending_releases`).toEqual([]);
  });
});

describe("draft recovery in batches", () => {
  it("recovers stale drafts of several products, each batch with its own product's claim and minimum", async () => {
    const products = [h.partners.product(5000), h.partners.product(1000)];
    const drafts = products.flatMap((productId) =>
      [0, 1].map(() => ({ id: newId("po"), productId, partnershipId: h.partners.partnership(productId) })),
    );
    // 4000 reaches the second product's minimum (1000) but not the first's (5000).
    const commissions = drafts.map((draft) => h.ledger.add(draft.productId, draft.partnershipId, 4000));
    for (const productId of products) {
      await reserveDrafts(
        h.deps,
        drafts.filter((d) => d.productId === productId),
      );
    }
    const unlinkedBefore = h.ledger.unlinked.length;
    h.ledger.claimSizes.length = 0;

    h.clock.offsetMs = 31_000;
    expect(await recoverStaleDrafts(h.deps)).toBe(4);

    // One claim per product, for both of its drafts.
    expect(h.ledger.claimSizes).toEqual([2, 2]);
    const [first, second] = products;
    expect(await payoutsOf(first ?? "")).toEqual([]);
    expect(h.ledger.unlinked.slice(unlinkedBefore).sort()).toEqual(
      drafts
        .filter((d) => d.productId === first)
        .map((d) => d.id)
        .sort(),
    );
    const recovered = await payoutsOf(second ?? "");
    expect(recovered.map((p) => [p.id, p.status, p.amountCents]).sort()).toEqual(
      drafts
        .filter((d) => d.productId === second)
        .map((d) => [d.id, "pending", 4000])
        .sort(),
    );
    for (const [i, draft] of drafts.entries()) {
      expect(h.ledger.get(commissions[i] ?? "").payoutId).toBe(draft.productId === second ? draft.id : "");
    }
    expect(await recoverStaleDrafts(h.deps)).toBe(0);
  });
});

describe("the schedule", () => {
  it("runs for every product once per interval, whichever replica ticks first", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    h.ledger.add(productId, partnershipId, 2500);
    const hour = 3600_000;

    // The migration started the clock: the first run is one interval later.
    expect(await runScheduledGeneration(h.deps, hour)).toBeUndefined();
    h.clock.offsetMs = hour + 1000;
    const [first, second] = await Promise.all([
      runScheduledGeneration(h.deps, hour),
      runScheduledGeneration(h.deps, hour),
    ]);

    expect([first, second].filter((run) => run === undefined)).toHaveLength(1);
    expect(await payoutsOf(productId)).toMatchObject([{ partnershipId, status: "pending", amountCents: 2500 }]);
    expect(await runScheduledGeneration(h.deps, hour)).toBeUndefined();
  });
});
