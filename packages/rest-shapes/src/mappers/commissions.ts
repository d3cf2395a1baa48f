import {
  type Commission,
  type CommissionReview,
  type CommissionRule,
  CommissionSkipped,
  CommissionStatus,
  type FraudFlag,
  HoldReason,
  type PreviewCommissionsResponse,
  ReviewDecision,
  RuleSource,
  RuleType,
} from "@affiliate/proto/ledger";
import type { Partnership } from "@affiliate/proto/partners";
import type {
  PublicCommission,
  PublicCommissionRule,
  PublicCommissionSkipped,
  PublicCommissionStatus,
  PublicFraudFlag,
  PublicHoldReason,
} from "../schemas/commissions.js";
import { attributionMethods } from "../schemas/commissions.js";
import type { PublicCommissionPreview } from "../schemas/tracking.js";
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

const skippedNames: Record<CommissionSkipped, PublicCommissionSkipped> = {
  [CommissionSkipped.UNSPECIFIED]: null,
  [CommissionSkipped.MAX_COMMISSION_MONTHS]: "max_commission_months",
  [CommissionSkipped.MAX_COMMISSION_PAYMENTS]: "max_commission_payments",
};

export function commissionSkippedName(skipped: CommissionSkipped): PublicCommissionSkipped {
  const name = skippedNames[skipped];
  if (name === undefined) throw new ContractViolation(`commission_skipped ${skipped} has no public name`);
  return name;
}

const holdReasonNames: Record<HoldReason, PublicHoldReason> = {
  [HoldReason.UNSPECIFIED]: null,
  [HoldReason.DISPUTE]: "dispute",
  [HoldReason.REVIEW]: "review",
};

const fraudSignals = new Set<string>(["self_referral", "duplicate_click", "bot", "refund_rate"]);

/** Flags as the public shape shows them: the evidence parsed back into its object. */
export function toPublicFlags(flags: readonly FraudFlag[]): PublicFraudFlag[] {
  return flags.map((flag) => {
    if (!fraudSignals.has(flag.signal)) throw new ContractViolation(`fraud signal ${flag.signal} has no public name`);
    return {
      signal: flag.signal as PublicFraudFlag["signal"],
      evidence: JSON.parse(flag.evidenceJson || "{}") as PublicFraudFlag["evidence"],
    };
  });
}

function toPublicReview(review: CommissionReview | undefined): PublicCommission["review"] {
  if (!review || review.decision === ReviewDecision.UNSPECIFIED) return null;
  return {
    decision: review.decision === ReviewDecision.REJECT ? "reject" : "approve",
    note: review.note,
    key: review.key,
    reviewed_at: isoTime(review.reviewedAt, "commission.review.reviewed_at", "ledger"),
  };
}

export function holdReasonName(reason: HoldReason): PublicHoldReason {
  const name = holdReasonNames[reason];
  if (name === undefined) throw new ContractViolation(`hold_reason ${reason} has no public name`);
  return name;
}

export function toPublicCommissionRule(rule: CommissionRule): PublicCommissionRule {
  if (rule.source === RuleSource.UNSPECIFIED || rule.type === RuleType.UNSPECIFIED) {
    throw new ContractViolation("commission rule without a source or a type");
  }
  return {
    source: rule.source === RuleSource.PARTNERSHIP ? "partnership" : "program",
    type: rule.type === RuleType.FLAT ? "flat" : "percent",
    rate_bps: rule.rateBps ?? null,
    flat_cents: rule.flatCents === undefined ? null : Number(rule.flatCents),
    payment_number: rule.paymentNumber,
    first_payment_at: isoTime(rule.firstPaymentAt, "commission.rule.first_payment_at", "ledger"),
  };
}

/** What a payment would earn now (contract section 12), as POST /api/v1/commissions/preview answers. */
export function toPublicCommissionPreview(preview: PreviewCommissionsResponse): PublicCommissionPreview {
  return {
    partnership_id: preview.partnershipId || null,
    commissions: preview.commissions.map((commission) => ({
      level: commission.level,
      partnership_id: commission.partnershipId,
      amount_cents: Number(commission.amountCents),
      rule: toPublicCommissionRule(required(commission.rule, "preview.commissions[].rule", "ledger")),
    })),
    commission_skipped: commissionSkippedName(preview.commissionSkipped),
  };
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
    hold_reason: holdReasonName(commission.holdReason),
    rule: commission.rule ? toPublicCommissionRule(commission.rule) : null,
    flags: toPublicFlags(commission.flags),
    review: toPublicReview(commission.review),
    attribution: attributionName(commission.attribution),
  };
}

/** A commission's attribution method as the API names it; null when none was recorded. */
function attributionName(method: string): PublicCommission["attribution"] {
  const known = attributionMethods.find((name) => name === method);
  if (method !== "" && !known) throw new ContractViolation(`commission attribution ${method} has no public name`);
  return known ?? null;
}

/** The commission of a ledger response that always carries one. */
export function commissionOf(response: { commission?: Commission }): Commission {
  return required(response.commission, "commission", "ledger");
}
