import { DomainError, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { getPartnershipOrThrow, lockPartnershipOrThrow, setPartnershipStatus } from "../store/partnerships.js";
import { canTransition } from "./rules.js";
import type { Partnership, PartnershipStatus } from "./types.js";

/**
 * Moves a partnership to `status` along the allowed transitions (contract section 4). Removal
 * and a return from removed publish events; a removed or rejected partnership earns nothing.
 */
export async function updatePartnershipStatus(
  sql: Sql,
  productId: string,
  partnershipId: string,
  status: PartnershipStatus,
): Promise<Partnership> {
  return sql.begin(async (tx) => {
    const current = await lockPartnershipOrThrow(tx, productId, partnershipId);
    if (!canTransition(current.status, status)) {
      throw new DomainError("failed_precondition", `Cannot change an affiliate from ${current.status} to ${status}`);
    }
    await setPartnershipStatus(tx, partnershipId, status);
    const partnership = await getPartnershipOrThrow(tx, productId, partnershipId);
    await outbox.partnershipStatusChanged(tx, partnership, current.status);
    if (status === "removed") await outbox.partnershipRemoved(tx, partnership);
    if (current.status === "removed") await outbox.partnershipReactivated(tx, partnership, { notify: false });
    return partnership;
  });
}
