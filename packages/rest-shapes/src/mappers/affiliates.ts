import {
  type BulkRegistrationResult,
  type CommissionOverride,
  CommissionType,
  type Partnership,
  PartnershipStatus,
  type RegisterAffiliateResponse,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import type { PartnershipFigures, PartnershipStats } from "../figures.js";
import type {
  BulkAction,
  BulkResult,
  PublicCommissionOverride,
  PublicPartnership,
  PublicPartnershipDetail,
  RegisterAffiliateResponseBody,
} from "../schemas/affiliates.js";
import type { PublicPartnershipStatus } from "../schemas/common.js";
import { ContractViolation, isoTime, namesOf, required } from "./common.js";

const statusValues: Record<PublicPartnershipStatus, PartnershipStatus> = {
  active: PartnershipStatus.ACTIVE,
  pending: PartnershipStatus.PENDING,
  rejected: PartnershipStatus.REJECTED,
  removed: PartnershipStatus.REMOVED,
};
const statusNames = namesOf(statusValues);

const actionNames: Record<RegistrationOutcome, BulkAction | undefined> = {
  [RegistrationOutcome.UNSPECIFIED]: undefined,
  [RegistrationOutcome.CREATED]: "created",
  [RegistrationOutcome.JOINED]: "joined",
  [RegistrationOutcome.REACTIVATED]: "reactivated",
};

export function statusName(status: PartnershipStatus): PublicPartnershipStatus {
  const name = statusNames[status];
  if (!name) throw new ContractViolation(`partnership status ${status} has no public name`);
  return name;
}

export function statusValue(name: PublicPartnershipStatus): PartnershipStatus {
  return statusValues[name];
}

export function actionName(outcome: RegistrationOutcome): BulkAction {
  const name = actionNames[outcome];
  if (!name) throw new ContractViolation(`registration outcome ${outcome} has no public name`);
  return name;
}

/** The partnership of a partners response that always carries one. */
export function partnershipOf(response: { partnership?: Partnership }): Partnership {
  return required(response.partnership, "partnership");
}

const commissionTypeNames: Record<CommissionType, "percent" | "flat" | undefined> = {
  [CommissionType.UNSPECIFIED]: undefined,
  [CommissionType.PERCENT]: "percent",
  [CommissionType.FLAT]: "flat",
};

/** A limit on the wire: 0 is "no limit" (null), unset is inherited (left out). */
const limitName = (limit: number | undefined) => (limit === undefined ? undefined : limit === 0 ? null : limit);

/** The override's fields that are set, in their public names; the others are left out (inherited). */
export function toPublicCommissionOverride(override: CommissionOverride): PublicCommissionOverride {
  const fields: PublicCommissionOverride = {
    commission_type: commissionTypeNames[override.commissionType],
    commission_rate_bps: override.commissionRateBps,
    commission_flat_cents:
      override.commissionFlatCents === undefined ? undefined : Number(override.commissionFlatCents),
    tier2_rate_bps: override.tier2RateBps,
    max_commission_months: limitName(override.maxCommissionMonths),
    max_commission_payments: limitName(override.maxCommissionPayments),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** The public override as the partners RPC takes it: a null limit is 0 (no limit), a field left out stays unset. */
export function commissionOverrideValue(override: PublicCommissionOverride) {
  const limit = (value: number | null | undefined) => (value === null ? 0 : value);
  return {
    commissionType:
      override.commission_type === undefined
        ? CommissionType.UNSPECIFIED
        : override.commission_type === "flat"
          ? CommissionType.FLAT
          : CommissionType.PERCENT,
    commissionRateBps: override.commission_rate_bps,
    commissionFlatCents:
      override.commission_flat_cents === undefined ? undefined : BigInt(override.commission_flat_cents),
    tier2RateBps: override.tier2_rate_bps,
    maxCommissionMonths: limit(override.max_commission_months),
    maxCommissionPayments: limit(override.max_commission_payments),
  };
}

export function toPublicPartnership(partnership: Partnership, stats: PartnershipStats): PublicPartnership {
  const affiliate = required(partnership.affiliate, "partnership.affiliate");
  return {
    id: partnership.id,
    status: statusName(partnership.status),
    referral_code: partnership.referralCode,
    created_at: isoTime(partnership.createdAt, "partnership.created_at", "partners"),
    affiliate: { id: affiliate.id, email: affiliate.email, name: affiliate.name },
    external_id: partnership.externalId || null,
    commission_override: partnership.commissionOverride
      ? toPublicCommissionOverride(partnership.commissionOverride)
      : null,
    stats: { clicks: stats.clicks, conversions: stats.conversions, earned_cents: stats.earned_cents },
  };
}

export function toPublicPartnershipDetail(
  partnership: Partnership,
  { stats, breakdown }: PartnershipFigures,
): PublicPartnershipDetail {
  return {
    ...toPublicPartnership(partnership, stats),
    commissions: {
      pending_count: breakdown.pending_count,
      approved_count: breakdown.approved_count,
      pending_amount_cents: breakdown.pending_amount_cents,
      approved_amount_cents: breakdown.approved_amount_cents,
    },
  };
}

/** The registration body: camelCase and unwrapped, as spec section 4.1 shows it. */
export function toRegistrationBody(response: RegisterAffiliateResponse): RegisterAffiliateResponseBody {
  const partnership = required(response.partnership, "registration.partnership");
  const affiliate = required(partnership.affiliate, "registration.partnership.affiliate");
  const action = actionName(response.outcome);
  return {
    affiliate: {
      id: affiliate.id,
      email: affiliate.email,
      name: affiliate.name,
      isNew: action === "created",
    },
    partnership: { id: partnership.id, status: statusName(partnership.status), referralCode: partnership.referralCode },
  };
}

export function toBulkResult(result: BulkRegistrationResult): BulkResult {
  switch (result.result.case) {
    case "registered":
      return {
        email: result.email,
        success: true,
        action: actionName(result.result.value.outcome),
        partnershipId: result.result.value.partnershipId,
      };
    case "error":
      return { email: result.email, success: false, error: result.result.value };
    default:
      throw new ContractViolation("bulk registration result without an outcome");
  }
}
