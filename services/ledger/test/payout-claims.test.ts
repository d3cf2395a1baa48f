import { newId } from "@affiliate/platform";
import { CommissionStatus } from "@affiliate/proto/ledger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleCommissions } from "../src/domain/payout-claims.js";
import { EventType, type Harness, newAffiliate, newProduct, startHarness, track } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function approvedCommissions(count: number) {
  const productId = await newProduct(h, { holdDays: 0 });
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
  return { productId, partnershipId: aff.id, ids };
}

describe("payout claims", () => {
  it("lists payable balances of approved, unlinked commissions per partnership", async () => {
    const { productId, partnershipId } = await approvedCommissions(3);
    const { balances } = await h.ledger.listPayableBalances({ productId });
    expect(balances).toEqual([expect.objectContaining({ partnershipId, amountCents: 600n, commissionCount: 3n })]);
  });

  it("claims atomically and idempotently per payout id; a second payout gets nothing", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(2);
    const payoutId = newId("po");
    const first = await h.ledger.claimCommissions({ productId, partnershipId, payoutId });
    expect(first.commissions.map((c) => c.commissionId).sort()).toEqual([...ids].sort());
    const repeat = await h.ledger.claimCommissions({ productId, partnershipId, payoutId });
    expect(repeat.commissions).toEqual(first.commissions);
    const other = await h.ledger.claimCommissions({ productId, partnershipId, payoutId: newId("po") });
    expect(other.commissions).toEqual([]);
    expect((await h.ledger.listPayableBalances({ productId })).balances).toEqual([]);
    const read = await h.ledger.getCommission({ productId, commissionId: ids[0] ?? "" });
    expect(read.commission?.payoutId).toBe(payoutId);
  });

  it("concurrent claims for different payouts never share a commission", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(5);
    const claims = await Promise.all(
      Array.from({ length: 4 }, () => h.ledger.claimCommissions({ productId, partnershipId, payoutId: newId("po") })),
    );
    const claimed = claims.flatMap((c) => c.commissions.map((x) => x.commissionId));
    expect(claimed.sort()).toEqual([...ids].sort());
  });

  it("release unlinks unpaid commissions, once", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(2);
    const payoutId = newId("po");
    await h.ledger.claimCommissions({ productId, partnershipId, payoutId });
    expect((await h.ledger.releaseCommissions({ productId, payoutId })).releasedCount).toBe(2n);
    expect((await h.ledger.releaseCommissions({ productId, payoutId })).releasedCount).toBe(0n);
    const read = await h.ledger.getCommission({ productId, commissionId: ids[0] ?? "" });
    expect(read.commission).toMatchObject({ payoutId: "", status: CommissionStatus.APPROVED });
  });

  it("settling marks the payout's approved commissions paid, once, and keeps refunded ones", async () => {
    const { productId, partnershipId, ids } = await approvedCommissions(3);
    const payoutId = newId("po");
    await h.ledger.claimCommissions({ productId, partnershipId, payoutId });
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

  it("refuses a claim for something that is not a payout id", async () => {
    const { productId, partnershipId } = await approvedCommissions(1);
    await expect(h.ledger.claimCommissions({ productId, partnershipId, payoutId: "anything" })).rejects.toThrow();
  });
});
