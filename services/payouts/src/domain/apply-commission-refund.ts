import { newId, type Queryable } from "@affiliate/platform";
import { insertAdjustment } from "../store/adjustments.js";
import { applyRefundToLink, getLink, linkFromRefund } from "../store/links.js";
import { lockAnyPayout, lockNewestOpenPayout, recomputePayout } from "../store/payouts.js";

/** What a CommissionRefunded event tells payouts, in the domain's words. */
export interface CommissionRefund {
  /** The event id: the source of a clawback, so a redelivery creates nothing. */
  eventId: string;
  productId: string;
  partnershipId: string;
  commissionId: string;
  /** The payout the ledger had the commission linked to when it applied the refund; null when none. */
  payoutId: string | null;
  previousAmountCents: number;
  newAmountCents: number;
  /** The commission was paid before the refund: its money already went out. */
  wasPaid: boolean;
  /** The payment's refunded total after this refund; grows with every refund of the payment. */
  paymentRefundedCents: number;
}

export type RefundOutcome =
  | { kind: "recalculated"; payoutId: string }
  | { kind: "clawed_back"; adjustmentId: string; payoutId: string | null }
  | { kind: "nothing" };

const closedStatuses = new Set(["processing", "completed"]);

/**
 * Whether applyCommissionRefund would certainly do nothing, known from the event alone: the
 * commission was in no payout when the ledger refunded it, and its money had not gone out. Most
 * refunds are of such commissions, and their events need no transaction.
 */
export const refundChangesNothing = (refund: CommissionRefund): boolean => refund.payoutId === null && !refund.wasPaid;

/**
 * Applies a refund of a commission to payouts (spec 3.1, contract 8), inside the consumer's
 * transaction (which also records the event id):
 *
 * - The commission sits in an open payout (pending, approved, failed): the link takes the new
 *   amount and the payout is recalculated, unless the link has already seen a later refund of
 *   the payment (an older event arriving late changes nothing).
 * - Its money already went out (it is in a processing or completed payout, or it was paid): a
 *   negative adjustment of what the refund took back lands on the partnership's newest open
 *   payout, recalculated, or stays unapplied for the next generation. Those payouts never change.
 * - It is in a draft (the refund beat the finishing of a generation): the link is written now
 *   with the refunded amount, and the draft's finish keeps it.
 * - Otherwise, nothing: an unlinked commission is read by the next generation at its current
 *   amount.
 *
 * A link only follows a refund the ledger applied while the commission was linked to that same
 * payout: a refund from before the claim is already in the amount the claim returned.
 */
export async function applyCommissionRefund(tx: Queryable, refund: CommissionRefund): Promise<RefundOutcome> {
  // The payout the refund saw is locked first: links of a payout only change under its lock,
  // so a generation finishing that draft, or an action on it, is either before or after this.
  const locked = refund.payoutId ? await lockAnyPayout(tx, refund.payoutId) : undefined;
  const payout = locked?.productId === refund.productId ? locked : undefined;
  const link = payout ? await getLink(tx, refund.commissionId) : undefined;

  if (payout && link?.payoutId === payout.id) {
    if (refund.wasPaid || closedStatuses.has(payout.status)) {
      if (refund.paymentRefundedCents <= link.paymentRefundedCentsSeen) return { kind: "nothing" };
      return clawBack(tx, refund);
    }
    const changed = await applyRefundToLink(tx, link.commissionId, {
      newAmountCents: refund.newAmountCents,
      paymentRefundedCents: refund.paymentRefundedCents,
    });
    if (!changed) return { kind: "nothing" };
    // A draft is summed when it is finished.
    if (payout.status !== "draft") await recomputePayout(tx, payout.id);
    return { kind: "recalculated", payoutId: payout.id };
  }
  if (refund.wasPaid) return clawBack(tx, refund);
  if (payout?.status === "draft" && !link) {
    await linkFromRefund(tx, {
      payoutId: payout.id,
      commissionId: refund.commissionId,
      amountCents: refund.newAmountCents,
      paymentRefundedCents: refund.paymentRefundedCents,
    });
    return { kind: "recalculated", payoutId: payout.id };
  }
  return { kind: "nothing" };
}

async function clawBack(tx: Queryable, refund: CommissionRefund): Promise<RefundOutcome> {
  const clawbackCents = refund.previousAmountCents - refund.newAmountCents;
  if (clawbackCents <= 0) return { kind: "nothing" };
  const target = await lockNewestOpenPayout(tx, refund.productId, refund.partnershipId);
  const adjustmentId = newId("adj");
  const inserted = await insertAdjustment(tx, {
    id: adjustmentId,
    productId: refund.productId,
    partnershipId: refund.partnershipId,
    commissionId: refund.commissionId,
    amountCents: -clawbackCents,
    payoutId: target?.id ?? null,
    sourceEventId: refund.eventId,
  });
  if (!inserted) return { kind: "nothing" };
  if (target) await recomputePayout(tx, target.id);
  return { kind: "clawed_back", adjustmentId, payoutId: target?.id ?? null };
}
