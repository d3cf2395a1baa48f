import { newId } from "@affiliate/platform";
import { CommissionStatus } from "@affiliate/proto/ledger";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxPayoutsPerCall, settleCommissions } from "../src/domain/payout-claims.js";
import {
  EventType,
  eventually,
  failure,
  type Harness,
  newAffiliate,
  newProduct,
  startHarness,
  track,
} from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

/** `count` approved commissions of 10.00 payments (2.00 each) for a new affiliate of the product. */
async function approvedCommissionsOf(productId: string, count: number) {
  const aff = await newAffiliate(h, productId);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { event } = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
    });
    ids.push(event?.commissions[0]?.id ?? "");
  }
  return { partnershipId: aff.id, ids };
}

async function approvedCommissions(count: number) {
  const productId = await newProduct(h, { holdDays: 0 });
  return { productId, ...(await approvedCommissionsOf(productId, count)) };
}

/** One claim per partnership, each for a new payout id. */
const claimsFor = (partnershipIds: string[]) =>
  partnershipIds.map((partnershipId) => ({ partnershipId, payoutId: newId("po") }));

describe("payout claims", () => {
  it("lists payable balances of approved, unlinked commissions per partnership", async () => {
    const { productId, partnershipId } = await approvedCommissions(3);
    const { balances } = await h.ledger.listPayableBalances({ productId });
    expect(balances).toEqual([expect.objectContaining({ partnershipId, amountCents: 600n, commissionCount: 3n })]);
  });

  it("claims atomically and idempotently per payout id; a second payout gets nothing", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(2);
    const payoutId = newId("po");
    const first = await h.ledger.claimCommissions({ productId, claims: [{ partnershipId, payoutId }] });
    expect(first.commissions.map((c) => c.commissionId).sort()).toEqual([...ids].sort());
    expect(first.commissions.every((c) => c.payoutId === payoutId && c.amountCents === 200n)).toBe(true);
    const repeat = await h.ledger.claimCommissions({ productId, claims: [{ partnershipId, payoutId }] });
    expect(repeat.commissions).toEqual(first.commissions);
    const other = await h.ledger.claimCommissions({ productId, claims: claimsFor([partnershipId]) });
    expect(other.commissions).toEqual([]);
    expect((await h.ledger.listPayableBalances({ productId })).balances).toEqual([]);
    const read = await h.ledger.getCommission({ productId, commissionId: ids[0] ?? "" });
    expect(read.commission?.payoutId).toBe(payoutId);
  });

  it("a bulk claim links each partnership's commissions to its own payout; a repeat returns the same set", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const partnerships = [
      await approvedCommissionsOf(productId, 2),
      await approvedCommissionsOf(productId, 1),
      await approvedCommissionsOf(productId, 3),
    ];
    const idle = await approvedCommissionsOf(productId, 1);
    const claims = claimsFor(partnerships.map((p) => p.partnershipId));

    const { commissions } = await h.ledger.claimCommissions({ productId, claims });

    // Each commission went to the payout of its own partnership, and only claimed partnerships' did.
    const expected = partnerships.flatMap((p, i) => p.ids.map((id) => [id, claims[i]?.payoutId]));
    expect(commissions.map((c) => [c.commissionId, c.payoutId]).sort()).toEqual(expected.sort());
    // Ordered by payout id, then commission id.
    const order = commissions.map((c) => `${c.payoutId}/${c.commissionId}`);
    expect(order).toEqual([...order].sort());
    for (const [commissionId, payoutId] of expected) {
      const read = await h.ledger.getCommission({ productId, commissionId: commissionId ?? "" });
      expect(read.commission?.payoutId).toBe(payoutId);
    }
    expect((await h.ledger.listPayableBalances({ productId })).balances).toEqual([
      expect.objectContaining({ partnershipId: idle.partnershipId, commissionCount: 1n }),
    ]);

    // A repeat, in another order, returns the same set and links nothing new.
    const repeat = await h.ledger.claimCommissions({ productId, claims: [...claims].reverse() });
    expect(repeat.commissions).toEqual(commissions);
  });

  it("concurrent claims for different payouts never share a commission", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(5);
    const claims = await Promise.all(
      Array.from({ length: 4 }, () => h.ledger.claimCommissions({ productId, claims: claimsFor([partnershipId]) })),
    );
    const claimed = claims.flatMap((c) => c.commissions.map((x) => x.commissionId));
    expect(claimed.sort()).toEqual([...ids].sort());
  });

  it("concurrent bulk claims over overlapping partnerships link each commission once and do not deadlock", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const partnerships: { partnershipId: string; ids: string[] }[] = [];
    for (let i = 0; i < 4; i++) partnerships.push(await approvedCommissionsOf(productId, 3));
    const ids = partnerships.map((p) => p.partnershipId);
    // Overlapping sets in different orders: locked in request order, these would deadlock.
    const requests = [ids, [...ids].reverse(), [ids[2], ids[0], ids[3]], [ids[3], ids[1]]].map((set) =>
      claimsFor(set.map((id) => id ?? "")),
    );
    // Claim statements waiting for a row lock (other sessions, such as autovacuum, do not count).
    const waitingClaims = async () =>
      (
        await h.sql<{ n: number }[]>`
          select count(*)::int8 as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and query like '%update commissions c set payout_id%'`
      )[0]?.n;

    // A commission of every partnership is held, so every claim queues up behind it; then all go.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked = () => {};
    const holding = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holder = h.sql.begin(async (tx) => {
      await tx`select id from commissions where id in ${tx(partnerships.map((p) => p.ids[1] ?? ""))} for update`;
      locked();
      await held;
    });
    await holding;
    const results = Promise.allSettled(requests.map((claims) => h.ledger.claimCommissions({ productId, claims })));
    try {
      await eventually(async () => (await waitingClaims()) === requests.length);
    } finally {
      release();
      await holder;
    }
    const settled = await results;

    // Every call succeeded: a deadlock would have failed one of them.
    expect(settled.map((r) => r.status)).toEqual(requests.map(() => "fulfilled"));
    const answers = settled.map((r) => (r.status === "fulfilled" ? r.value.commissions : []));
    const linked = answers.flat();
    // Each commission went to exactly one payout, of a claim for its own partnership.
    expect(linked.map((c) => c.commissionId).sort()).toEqual(partnerships.flatMap((p) => p.ids).sort());
    const claimOf = new Map(requests.flat().map((claim) => [claim.payoutId, claim.partnershipId]));
    for (const commission of linked) {
      const owner = partnerships.find((p) => p.ids.includes(commission.commissionId));
      expect(claimOf.get(commission.payoutId)).toBe(owner?.partnershipId);
      const read = await h.ledger.getCommission({ productId, commissionId: commission.commissionId });
      expect(read.commission?.payoutId).toBe(commission.payoutId);
    }
  });

  it("refuses more claims than the maximum per call, and links nothing", async () => {
    const { productId, partnershipId } = await approvedCommissions(1);
    const others = Array.from({ length: maxPayoutsPerCall }, (_, i) => `ptn_missing_${i}`);
    const error = await failure(
      h.ledger.claimCommissions({ productId, claims: claimsFor([partnershipId, ...others]) }),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
    expect((await h.ledger.listPayableBalances({ productId })).balances).toHaveLength(1);
    // The maximum itself is accepted.
    const { commissions } = await h.ledger.claimCommissions({
      productId,
      claims: claimsFor([partnershipId, ...others.slice(1)]),
    });
    expect(commissions).toHaveLength(1);
  });

  it("refuses a partnership or a payout id twice in one call", async () => {
    const { productId, partnershipId } = await approvedCommissions(1);
    const other = (await approvedCommissionsOf(productId, 1)).partnershipId;
    const payoutId = newId("po");
    const twicePartnership = await failure(
      h.ledger.claimCommissions({ productId, claims: claimsFor([partnershipId, partnershipId]) }),
    );
    expect(twicePartnership?.code).toBe(Code.InvalidArgument);
    const twicePayout = await failure(
      h.ledger.claimCommissions({
        productId,
        claims: [
          { partnershipId, payoutId },
          { partnershipId: other, payoutId },
        ],
      }),
    );
    expect(twicePayout?.code).toBe(Code.InvalidArgument);
    expect((await h.ledger.listPayableBalances({ productId })).balances).toHaveLength(2);
  });

  it("release unlinks unpaid commissions, once", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(2);
    const payoutId = newId("po");
    await h.ledger.claimCommissions({ productId, claims: [{ partnershipId, payoutId }] });
    expect((await h.ledger.releaseCommissions({ productId, payoutIds: [payoutId] })).releasedCount).toBe(2n);
    expect((await h.ledger.releaseCommissions({ productId, payoutIds: [payoutId] })).releasedCount).toBe(0n);
    const read = await h.ledger.getCommission({ productId, commissionId: ids[0] ?? "" });
    expect(read.commission).toMatchObject({ payoutId: "", status: CommissionStatus.APPROVED });
  });

  it("releases several payouts in one call, and only those", async () => {
    const first = await approvedCommissions(2);
    const second = await approvedCommissionsOf(first.productId, 1);
    const kept = await approvedCommissionsOf(first.productId, 1);
    const [one, two, three] = [newId("po"), newId("po"), newId("po")];
    await h.ledger.claimCommissions({
      productId: first.productId,
      claims: [
        { partnershipId: first.partnershipId, payoutId: one },
        { partnershipId: second.partnershipId, payoutId: two },
        { partnershipId: kept.partnershipId, payoutId: three },
      ],
    });

    const released = await h.ledger.releaseCommissions({ productId: first.productId, payoutIds: [one, two] });

    expect(released.releasedCount).toBe(3n);
    const payoutOf = async (commissionId: string) =>
      (await h.ledger.getCommission({ productId: first.productId, commissionId })).commission?.payoutId;
    expect(await payoutOf(first.ids[0] ?? "")).toBe("");
    expect(await payoutOf(second.ids[0] ?? "")).toBe("");
    expect(await payoutOf(kept.ids[0] ?? "")).toBe(three);
  });

  it("refuses more payout ids than the maximum in one release", async () => {
    const payoutIds = Array.from({ length: maxPayoutsPerCall + 1 }, () => newId("po"));
    const error = await failure(h.ledger.releaseCommissions({ productId: newId("prd"), payoutIds }));
    expect(error?.code).toBe(Code.InvalidArgument);
  });

  it("settling marks the payout's approved commissions paid, once, and keeps refunded ones", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(3);
    const payoutId = newId("po");
    await h.ledger.claimCommissions({ productId, claims: [{ partnershipId, payoutId }] });
    await h.ledger.refund({ productId, identification: { case: "commissionId", value: ids[2] ?? "" } });
    const settled = await h.sql.begin((tx) => settleCommissions(tx, productId, payoutId));
    expect(settled.map((c) => c.id).sort()).toEqual([ids[0], ids[1]].sort());
    expect(await h.sql.begin((tx) => settleCommissions(tx, productId, payoutId))).toEqual([]);
    const statuses = await Promise.all(
      ids.map(async (id) => (await h.ledger.getCommission({ productId, commissionId: id })).commission?.status),
    );
    expect(statuses).toEqual([CommissionStatus.PAID, CommissionStatus.PAID, CommissionStatus.REFUNDED]);
    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [partnershipId] });
    expect(stats[partnershipId]).toMatchObject({ earnedCents: 400n, approvedCount: 0n, pendingCount: 0n });
  });

  it("refuses a claim for something that is not a payout id, and links nothing of the call", async () => {
    const { productId, partnershipId } = await approvedCommissions(1);
    const other = (await approvedCommissionsOf(productId, 1)).partnershipId;
    const error = await failure(
      h.ledger.claimCommissions({
        productId,
        claims: [...claimsFor([other]), { partnershipId, payoutId: "anything" }],
      }),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
    expect((await h.ledger.listPayableBalances({ productId })).balances).toHaveLength(2);
  });
});
