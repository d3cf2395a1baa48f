import { characterCount } from "@affiliate/contract-rules";
import { DomainError, type Sql } from "@affiliate/platform";
import { enqueueCommissionEvent } from "../events/outbox.js";
import { getCommissionOrThrow, lockCommissionFamily, recordReview } from "../store/commissions.js";
import { openHoldReasonOf } from "../store/holds.js";
import { recordCommissionChange } from "./commission-changes.js";
import { RollupChanges } from "./rollup-changes.js";
import type { Commission, CommissionStatus, ReviewDecision } from "./types.js";

export interface ReviewInput {
  productId: string;
  commissionId: string;
  decision: ReviewDecision;
  /** Why; at most 500 characters, may be empty. */
  note: string;
  /** The key that decides, masked ("sk_live_…abcd"). */
  key: string;
  now: Date;
}

/**
 * A merchant's decision on a commission a fraud signal held for review (contract section 18),
 * in one transaction with the commission and its level-2 child locked (parent first, as every
 * locker of a family does):
 *
 * - approve: the review hold is lifted. A commission whose hold period is over is approved at
 *   once, as the sweep would have; one still in it waits for the sweep (the hold period is the
 *   refund window, which a review does not shorten). A payment disputed meanwhile keeps it held
 *   for the dispute.
 * - reject: rejected, as PATCH reject would, with the note as its reason. Its payment stays
 *   recorded and counted.
 *
 * The decision, note, key and time are kept on each commission it decided, and each gets
 * commission.reviewed (then commission.approved or commission.rejected when its status changed).
 * A commission that is not awaiting review is FAILED_PRECONDITION naming its state; one already
 * reviewed is ALREADY_EXISTS with the first decision, so a repeated click decides nothing twice.
 */
export async function reviewCommission(sql: Sql, input: ReviewInput): Promise<Commission> {
  if (characterCount(input.note) > 500) throw DomainError.invalidField("note", "At most 500 characters");
  return sql.begin(async (tx) => {
    const family = await lockCommissionFamily(tx, input.productId, input.commissionId);
    const target = family.find((c) => c.id === input.commissionId) as Commission;
    if (target.review) {
      const { decision, note, key, reviewedAt } = target.review;
      throw DomainError.withInfo(
        "already_exists",
        `Commission ${target.id} was already reviewed: ${decision} (${reviewedAt.toISOString()})`,
        {
          reason: "already_reviewed",
          details: { review: { decision, note, key, reviewed_at: reviewedAt.toISOString() } },
        },
      );
    }
    if (target.holdReason !== "review") {
      const state = target.holdReason ? `${target.status}, held (${target.holdReason})` : target.status;
      throw DomainError.withInfo(
        "failed_precondition",
        `Commission ${target.id} is not flagged for review: it is ${state}`,
        { reason: "not_flagged", details: { status: target.status, hold_reason: target.holdReason } },
      );
    }
    const deciding = family.filter((c) => c.holdReason === "review" && !c.review);
    const disputed = (await openHoldReasonOf(tx, target.eventId)) === "dispute";
    const rollups = new RollupChanges();
    const statusChanged: { commission: Commission; status: CommissionStatus }[] = [];
    for (const commission of deciding) {
      const status: CommissionStatus =
        input.decision === "reject"
          ? commission.status === "pending"
            ? "rejected"
            : commission.status // refunded in full while it waited: it stays so
          : !disputed && commission.status === "pending" && commission.holdUntil <= input.now
            ? "approved"
            : commission.status;
      await recordReview(tx, commission.id, {
        decision: input.decision,
        note: input.note,
        key: input.key,
        reviewedAt: input.now,
        status,
        holdReason: input.decision === "approve" && disputed ? "dispute" : null,
        reason: input.decision === "reject" && input.note !== "" ? input.note : undefined,
      });
      if (status !== commission.status) {
        recordCommissionChange(rollups, commission, commission, { status, amountCents: commission.amountCents });
        statusChanged.push({ commission, status });
      }
    }
    await rollups.flush(tx);
    for (const commission of deciding) {
      const updated = await getCommissionOrThrow(tx, input.productId, commission.id);
      await enqueueCommissionEvent(tx, "commissionReviewed", updated);
      const change = statusChanged.find((c) => c.commission.id === commission.id);
      if (change) {
        await enqueueCommissionEvent(
          tx,
          change.status === "approved" ? "commissionApproved" : "commissionRejected",
          updated,
        );
      }
    }
    return getCommissionOrThrow(tx, input.productId, input.commissionId);
  });
}
