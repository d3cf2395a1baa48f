import {
  type BulkRegistrationResult,
  type Partnership,
  PartnershipStatus,
  type RegisterAffiliateResponse,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import type { PartnershipFigures, PartnershipStats } from "../figures.js";
import type {
  BulkAction,
  BulkResult,
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

export function toPublicPartnership(partnership: Partnership, stats: PartnershipStats): PublicPartnership {
  const affiliate = required(partnership.affiliate, "partnership.affiliate");
  return {
    id: partnership.id,
    status: statusName(partnership.status),
    referral_code: partnership.referralCode,
    created_at: isoTime(partnership.createdAt, "partnership.created_at", "partners"),
    affiliate: { id: affiliate.id, email: affiliate.email, name: affiliate.name },
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
