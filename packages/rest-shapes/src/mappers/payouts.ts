import type { Partnership } from "@affiliate/proto/partners";
import { type Payout, PayoutStatus } from "@affiliate/proto/payouts";
import type { PublicPayout, PublicPayoutStatus } from "../schemas/payouts.js";
import { ContractViolation, isoTime, isoTimeOrNull, namesOf, required } from "./common.js";

const payoutStatusValues: Record<PublicPayoutStatus, PayoutStatus> = {
  pending: PayoutStatus.PENDING,
  approved: PayoutStatus.APPROVED,
  failed: PayoutStatus.FAILED,
  processing: PayoutStatus.PROCESSING,
  completed: PayoutStatus.COMPLETED,
};
const payoutStatusNames = namesOf(payoutStatusValues);

export function payoutStatusName(status: PayoutStatus): PublicPayoutStatus {
  const name = payoutStatusNames[status];
  if (!name) throw new ContractViolation(`payout status ${status} has no public name`);
  return name;
}

export function payoutStatusValue(name: PublicPayoutStatus): PayoutStatus {
  return payoutStatusValues[name];
}

/** The payout of a payouts response that always carries one. */
export function payoutOf(response: { payout?: Payout }): Payout {
  return required(response.payout, "payout", "payouts");
}

/**
 * A payout in contract section 8's shape: the payouts service's record with its affiliate, which
 * partners supplies (the partnership's profile). `deleted` (a reject) answers status `rejected`.
 */
export function toPublicPayout(
  payout: Payout,
  partnership: Partnership | undefined,
  { deleted = false }: { deleted?: boolean } = {},
): PublicPayout {
  const found = required(partnership, `partnership ${payout.partnershipId} of payout ${payout.id}`);
  const affiliate = required(found.affiliate, "partnership.affiliate");
  return {
    id: payout.id,
    status: deleted ? "rejected" : payoutStatusName(payout.status),
    amount_cents: payout.amountCents,
    adjustment_cents: payout.adjustmentCents,
    partnership_id: payout.partnershipId,
    affiliate: { id: affiliate.id, email: affiliate.email, name: affiliate.name },
    commission_count: Number(payout.commissionCount),
    created_at: isoTime(payout.createdAt, "payout.created_at", "payouts"),
    approved_at: isoTimeOrNull(payout.approvedAt),
    paid_at: isoTimeOrNull(payout.paidAt),
    gateway_transfer_id: payout.gatewayTransferId || null,
  };
}
