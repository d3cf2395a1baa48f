import { newId } from "@affiliate/platform";
import { PayoutAction } from "@affiliate/proto/payouts";
import { insertAdjustment } from "../src/store/adjustments.js";
import type { Harness } from "./harness.js";

/** An unapplied clawback for a partnership, as a refund of a paid commission leaves it. */
export async function unappliedAdjustment(h: Harness, productId: string, partnershipId: string, amountCents: number) {
  const id = newId("adj");
  await insertAdjustment(h.sql, {
    id,
    productId,
    partnershipId,
    commissionId: newId("com"),
    amountCents,
    payoutId: null,
    sourceEventId: newId("msg"),
  });
  return id;
}

export async function adjustmentsOf(h: Harness, partnershipId: string) {
  return h.sql<{ id: string; amountCents: number; payoutId: string | null; sourceEventId: string }[]>`
    select id, amount_cents, payout_id, source_event_id from adjustments
    where partnership_id = ${partnershipId} order by id`;
}

export async function linksOf(h: Harness, payoutId: string) {
  return h.sql<{ commissionId: string; amountCents: number; paymentRefundedCentsSeen: number }[]>`
    select commission_id, amount_cents, payment_refunded_cents_seen from payout_commissions
    where payout_id = ${payoutId} order by commission_id`;
}

/** A product (minimum 5000 unless given), an active partnership with approved commissions, and its pending payout. */
export async function pendingPayout(h: Harness, commissions: number[] = [6000], minimum = 5000) {
  const productId = h.partners.product(minimum);
  const partnershipId = h.partners.partnership(productId);
  const commissionIds = commissions.map((amount) => h.ledger.add(productId, partnershipId, amount));
  const { payouts } = await h.payouts.generatePayouts({ productId });
  const payout = payouts[0];
  if (payouts.length !== 1 || !payout) throw new Error(`expected one payout, got ${payouts.length}`);
  return { productId, partnershipId, commissionIds, payoutId: payout.id, payout };
}

/** A payout paid out: approved, marked paid, and settled by the ledger as it does on payout.completed. */
export async function completedPayout(h: Harness, commissions: number[] = [6000]) {
  const created = await pendingPayout(h, commissions);
  const { productId, payoutId } = created;
  await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.APPROVE });
  await h.payouts.updatePayout({ productId, payoutId, action: PayoutAction.MARK_PAID, reference: "tr_1" });
  h.ledger.settle(payoutId);
  return created;
}
