import { type Commission, CommissionStatus } from "@affiliate/proto/ledger";
import type { Partnership } from "@affiliate/proto/partners";
import type { PublicCommission, PublicCommissionStatus } from "../schemas/commissions.js";
import { ContractViolation, isoTime, namesOf, required } from "./common.js";

const commissionStatusValues: Record<PublicCommissionStatus, CommissionStatus> = {
  pending: CommissionStatus.PENDING,
  approved: CommissionStatus.APPROVED,
  paid: CommissionStatus.PAID,
  rejected: CommissionStatus.REJECTED,
  refunded: CommissionStatus.REFUNDED,
};
const commissionStatusNames = namesOf(commissionStatusValues);

export function commissionStatusName(status: CommissionStatus): PublicCommissionStatus {
  const name = commissionStatusNames[status];
  if (!name) throw new ContractViolation(`commission status ${status} has no public name`);
  return name;
}

export function commissionStatusValue(name: PublicCommissionStatus): CommissionStatus {
  return commissionStatusValues[name];
}

/**
 * A commission in spec section 2.2's shape: the ledger's record with its affiliate, which the
 * ledger does not hold and partners supplies (the partnership's profile).
 */
export function toPublicCommission(commission: Commission, partnership: Partnership | undefined): PublicCommission {
  const found = required(partnership, `partnership ${commission.partnershipId} of commission ${commission.id}`);
  const affiliate = required(found.affiliate, "partnership.affiliate");
  return {
    id: commission.id,
    amount_cents: Number(commission.amountCents),
    status: commissionStatusName(commission.status),
    level: commission.level,
    parent_commission_id: commission.parentCommissionId || null,
    hold_until: isoTime(commission.holdUntil, "commission.hold_until", "ledger"),
    created_at: isoTime(commission.createdAt, "commission.created_at", "ledger"),
    affiliate: { id: affiliate.id, email: affiliate.email, name: affiliate.name },
    referral_code: commission.referralCode,
    customer_email: commission.customerEmail ?? null,
    payment_amount_cents: Number(commission.paymentAmountCents),
    payout_id: commission.payoutId || null,
  };
}

/** The commission of a ledger response that always carries one. */
export function commissionOf(response: { commission?: Commission }): Commission {
  return required(response.commission, "commission", "ledger");
}
