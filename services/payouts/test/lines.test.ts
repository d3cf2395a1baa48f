import { PayoutLineKind } from "@affiliate/proto/payouts";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unappliedAdjustment } from "./fixtures.js";
import { type Harness, startHarness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe("a payout's lines", () => {
  it("are its commissions at their linked amounts, then its adjustments, summing to its amount", async () => {
    const productId = h.partners.product(1000);
    const partnershipId = h.partners.partnership(productId);
    const commissions = [h.ledger.add(productId, partnershipId, 3000), h.ledger.add(productId, partnershipId, 4500)];
    const adjustment = await unappliedAdjustment(h, productId, partnershipId, -1200);
    const { payouts } = await h.payouts.generatePayouts({ productId });
    const payoutId = payouts[0]?.id ?? "";

    const { payout, lines } = await h.payouts.getPayout({ productId, payoutId, includeLines: true });
    expect(payout?.amountCents).toBe(6300n);
    expect(lines.map(({ kind, id, commissionId, amountCents }) => ({ kind, id, commissionId, amountCents }))).toEqual([
      ...[...commissions].sort().map((id) => ({
        kind: PayoutLineKind.COMMISSION,
        id,
        commissionId: id,
        amountCents: id === commissions[0] ? 3000n : 4500n,
      })),
      {
        kind: PayoutLineKind.ADJUSTMENT,
        id: adjustment,
        commissionId: expect.stringMatching(/^com_/),
        amountCents: -1200n,
      },
    ]);
    expect(lines.reduce((sum, line) => sum + line.amountCents, 0n)).toBe(payout?.amountCents);

    // Without the flag, no lines; scoped to another partnership, not found.
    expect((await h.payouts.getPayout({ productId, payoutId })).lines).toEqual([]);
    const scoped = await h.payouts.getPayout({ productId, payoutId, partnershipId, includeLines: true });
    expect(scoped.payout?.id).toBe(payoutId);
    const other = h.payouts.getPayout({ productId, payoutId, partnershipId: h.partners.partnership(productId) });
    await expect(other).rejects.toSatisfy((error) => ConnectError.from(error).code === Code.NotFound);
  });

  it("come with every payout of a listed page, read as GetPayout reads them, with include_lines", async () => {
    const productId = h.partners.product(1000);
    const jane = h.partners.partnership(productId);
    const ada = h.partners.partnership(productId);
    h.ledger.add(productId, jane, 3000);
    await unappliedAdjustment(h, productId, jane, -1200);
    h.ledger.add(productId, ada, 2500);
    await h.payouts.generatePayouts({ productId });
    // A second payout of jane's, so the page holds two of one partnership.
    h.ledger.add(productId, jane, 1800);
    await h.payouts.generatePayouts({ productId });

    const page = await h.payouts.listPayouts({ productId, pageSize: 10, includeLines: true });
    expect(page.payouts).toHaveLength(3);
    expect(Object.keys(page.lines).sort()).toEqual(page.payouts.map((payout) => payout.id).sort());
    for (const payout of page.payouts) {
      const lines = page.lines[payout.id]?.lines ?? [];
      expect(lines).toEqual((await h.payouts.getPayout({ productId, payoutId: payout.id, includeLines: true })).lines);
      expect(lines.reduce((sum, line) => sum + line.amountCents, 0n)).toBe(payout.amountCents);
    }
    const kinds = page.payouts.map((payout) => page.lines[payout.id]?.lines.map((line) => line.kind));
    expect(kinds).toContainEqual([PayoutLineKind.COMMISSION, PayoutLineKind.ADJUSTMENT]);

    // Scoped to a partnership, its payouts' lines only; without the flag, none.
    const janes = await h.payouts.listPayouts({ productId, partnershipId: jane, pageSize: 1, includeLines: true });
    expect(Object.keys(janes.lines)).toEqual([janes.payouts[0]?.id]);
    expect((await h.payouts.listPayouts({ productId, pageSize: 10 })).lines).toEqual({});
  });
});
