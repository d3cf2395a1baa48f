import { DomainError, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { deleteTokens } from "../store/affiliate-access.js";
import {
  getPartnershipOrThrow,
  lockPartnershipOrThrow,
  setCommissionOverride,
  setPartnershipStatus,
} from "../store/partnerships.js";
import { setExternalIdOrThrow } from "./register-affiliate.js";
import { canTransition, commissionOverrideErrors, externalIdError } from "./rules.js";
import type { CommissionOverride, Partnership, PartnershipStatus } from "./types.js";

export interface PartnershipChanges {
  /** The status to move to; undefined leaves it. */
  status?: PartnershipStatus | undefined;
  /** The new override (replacing the old one); null removes it; undefined leaves it. */
  commissionOverride?: CommissionOverride | null | undefined;
  /** The merchant's new id for the affiliate; null removes it; undefined leaves it. */
  externalId?: string | null | undefined;
}

/** An override that overrides nothing is no override. */
const normalizedOverride = (override: CommissionOverride | null): CommissionOverride | null =>
  override === null || Object.values(override).every((value) => value === undefined) ? null : override;

/**
 * Changes a partnership's status along the allowed transitions (contract section 4) and/or its
 * commission override (contract section 12), in one transaction: a refused change (a bad
 * override, a transition not allowed) changes nothing. Removal and a return from removed publish
 * their events; an override change publishes commission_override_changed, on which the ledger's
 * caches evict, so it applies to payments recorded afterwards.
 */
export async function updatePartnership(
  sql: Sql,
  productId: string,
  partnershipId: string,
  changes: PartnershipChanges,
): Promise<Partnership> {
  if (changes.commissionOverride) {
    const errors = commissionOverrideErrors(changes.commissionOverride);
    if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
  }
  const externalIdProblem = typeof changes.externalId === "string" ? externalIdError(changes.externalId) : undefined;
  if (externalIdProblem) throw DomainError.invalidField("external_id", externalIdProblem);
  return sql.begin(async (tx) => {
    const current = await lockPartnershipOrThrow(tx, productId, partnershipId);
    const { status } = changes;
    if (status !== undefined) {
      if (!canTransition(current.status, status)) {
        throw new DomainError("failed_precondition", `Cannot change an affiliate from ${current.status} to ${status}`);
      }
      await setPartnershipStatus(tx, partnershipId, status);
      // A token dies when its partnership stops being active, for good: a later return to
      // active brings none back. Gateways evict on the status_changed event below.
      if (current.status === "active" && status !== "active") await deleteTokens(tx, partnershipId);
    }
    if (changes.externalId !== undefined) await setExternalIdOrThrow(tx, partnershipId, changes.externalId);
    if (changes.commissionOverride !== undefined) {
      await setCommissionOverride(tx, partnershipId, normalizedOverride(changes.commissionOverride));
    }
    const partnership = await getPartnershipOrThrow(tx, productId, partnershipId);
    if (status !== undefined) {
      await outbox.partnershipStatusChanged(tx, partnership, current.status);
      if (status === "removed") await outbox.partnershipRemoved(tx, partnership);
      if (current.status === "removed") await outbox.partnershipReactivated(tx, partnership, { notify: false });
    }
    if (changes.commissionOverride !== undefined) await outbox.partnershipCommissionOverrideChanged(tx, partnership);
    return partnership;
  });
}
