import { characterCount } from "@affiliate/contract-rules";
import { DomainError, type Sql } from "@affiliate/platform";
import { enqueueCommissionEvent } from "../events/outbox.js";
import { getCommissionOrThrow, lockCommissionFamily, setCommissionStatus } from "../store/commissions.js";
import { recordCommissionChange } from "./commission-changes.js";
import { RollupChanges } from "./rollup-changes.js";
import type { Commission } from "./types.js";

export type CommissionAction = "approve" | "reject";

/**
 * A merchant's decision (contract section 6): approve ends a pending commission's hold period
 * early, unless a dispute holds it (contract section 13: not approved until the dispute closes);
 * reject voids a pending commission, or an approved one not yet in a payout, held or not. The
 * level-2 child follows its parent where it is in the same state.
 */
export async function updateCommission(
  sql: Sql,
  productId: string,
  commissionId: string,
  change: { action: CommissionAction; reason?: string | undefined },
): Promise<Commission> {
  if (change.reason !== undefined && characterCount(change.reason) > 500) {
    throw DomainError.invalidField("reason", "At most 500 characters");
  }
  return sql.begin(async (tx) => {
    const family = await lockCommissionFamily(tx, productId, commissionId);
    const target = family.find((c) => c.id === commissionId);
    if (!target) throw new DomainError("not_found", `Commission ${commissionId} not found`);
    if (target.holdReason === "review") {
      throw new DomainError(
        "failed_precondition",
        `Commission ${commissionId} is held for review: decide it with POST /api/v1/commissions/${commissionId}/review`,
      );
    }
    if (change.action === "approve" && target.holdReason !== null) {
      throw new DomainError(
        "failed_precondition",
        `Commission ${commissionId} is held (${target.holdReason}): it can be approved once the dispute closes`,
      );
    }
    const allowed = change.action === "approve" ? canApprove : canReject;
    if (!allowed(target)) {
      throw new DomainError(
        "failed_precondition",
        change.action === "approve"
          ? `Only a pending commission can be approved; this one is ${target.status}`
          : `Only a pending commission, or an approved one not in a payout, can be rejected; this one is ${target.status}${target.payoutId ? " and in a payout" : ""}`,
      );
    }
    const changing = family.filter(allowed);
    const status = change.action === "approve" ? "approved" : "rejected";
    await setCommissionStatus(
      tx,
      changing.map((c) => c.id),
      { status, reason: change.reason },
    );
    const rollups = new RollupChanges();
    for (const commission of changing) {
      recordCommissionChange(rollups, commission, commission, { status, amountCents: commission.amountCents });
      const updated = await getCommissionOrThrow(tx, productId, commission.id);
      await enqueueCommissionEvent(
        tx,
        change.action === "approve" ? "commissionApproved" : "commissionRejected",
        updated,
      );
    }
    await rollups.flush(tx);
    return getCommissionOrThrow(tx, productId, commissionId);
  });
}

/** A held commission (its payment disputed) is approved only once its hold is lifted. */
const canApprove = (c: Commission) => c.status === "pending" && c.holdReason === null;
const canReject = (c: Commission) => c.status === "pending" || (c.status === "approved" && c.payoutId === null);
