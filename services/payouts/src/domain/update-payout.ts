import { DomainError, type Sql } from "@affiliate/platform";
import { enqueuePayoutEvent } from "../events/outbox.js";
import { unapplyAdjustments } from "../store/adjustments.js";
import { deletePayouts, lockPayoutOrThrow, setStatus } from "../store/payouts.js";
import type { Payout, PayoutAction, PayoutStatus } from "./types.js";

/** Which statuses each action accepts, and what the merchant is told otherwise (spec 3.2, 7). */
const rules: Record<PayoutAction, { from: PayoutStatus[]; refusal: string }> = {
  approve: { from: ["pending", "failed"], refusal: "Payout must be in pending or failed state to approve" },
  reject: { from: ["pending"], refusal: "Payout must be in pending state to reject" },
  mark_paid: { from: ["approved"], refusal: "Payout must be in approved state to mark as paid" },
  mark_failed: { from: ["approved"], refusal: "Payout must be in approved state to mark as failed" },
};

export const maxReferenceLength = 500;

/**
 * A merchant's decision on a payout (spec 3.2 and 4.10, contract 8), under the payout's row
 * lock, with its event in the same transaction:
 * - approve: pending or failed -> approved (payout.approved);
 * - reject: pending -> deleted, its adjustments unapplied again (payout.rejected, carrying the
 *   payout as it was; the ledger unlinks the commissions when it consumes it);
 * - mark_paid: approved -> completed with paid_at and the transfer reference (payout.completed;
 *   the ledger marks the commissions paid);
 * - mark_failed: approved -> failed with the reference as the reason.
 * Another product's payout is NOT_FOUND; a status the action does not accept is FAILED_PRECONDITION.
 */
export async function updatePayout(
  sql: Sql,
  productId: string,
  payoutId: string,
  change: { action: PayoutAction; reference?: string | undefined; now: Date },
): Promise<{ payout: Payout; deleted: boolean }> {
  const reference = change.reference === "" ? undefined : change.reference;
  if (reference !== undefined && reference.length > maxReferenceLength) {
    throw DomainError.invalidField("reference", `At most ${maxReferenceLength} characters`);
  }
  const rule = rules[change.action];
  return sql.begin(async (tx) => {
    const payout = await lockPayoutOrThrow(tx, productId, payoutId);
    if (!rule.from.includes(payout.status)) throw new DomainError("failed_precondition", rule.refusal);
    switch (change.action) {
      case "approve": {
        const approved = await setStatus(tx, payout.id, { status: "approved", approvedAt: change.now });
        await enqueuePayoutEvent(tx, "payoutApproved", approved);
        return { payout: approved, deleted: false };
      }
      case "reject": {
        await unapplyAdjustments(tx, [payout.id]);
        await deletePayouts(tx, [payout.id]);
        await enqueuePayoutEvent(tx, "payoutRejected", payout);
        return { payout, deleted: true };
      }
      case "mark_paid": {
        const completed = await setStatus(tx, payout.id, {
          status: "completed",
          paidAt: change.now,
          gatewayTransferId: reference,
        });
        await enqueuePayoutEvent(tx, "payoutCompleted", completed);
        return { payout: completed, deleted: false };
      }
      case "mark_failed": {
        const failed = await setStatus(tx, payout.id, { status: "failed", failureReason: reference });
        return { payout: failed, deleted: false };
      }
    }
  });
}
