import {
  type Commission,
  CommissionStatus,
  EventType,
  type GetStatsResponse,
  type GetTimeseriesResponse,
  type Metrics,
  Period,
  type RefundResult,
  type TrackedEvent,
} from "@affiliate/proto/ledger";
import {
  type BulkRegistrationResult,
  type Partnership,
  PartnershipStatus,
  type Program,
  type RegisterAffiliateResponse,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import { type Payout, PayoutStatus } from "@affiliate/proto/payouts";
import { type Erasure, ErasureStatus } from "@affiliate/proto/privacy";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { PartnershipFigures, PartnershipStats } from "./figures.js";
import type {
  BulkAction,
  BulkResult,
  PublicPartnership,
  PublicPartnershipDetail,
  RegisterAffiliateResponseBody,
} from "./schemas/affiliates.js";
import type { PublicCommission, PublicCommissionStatus } from "./schemas/commissions.js";
import type { PublicPartnershipStatus } from "./schemas/common.js";
import type { PublicErasure, PublicErasureAnswer } from "./schemas/customers.js";
import type { PublicPayout, PublicPayoutStatus } from "./schemas/payouts.js";
import type { PublicProgram } from "./schemas/program.js";
import type { PublicRefundResult } from "./schemas/refunds.js";
import type { PublicPeriod, PublicStats, PublicTimeseriesPoint } from "./schemas/stats.js";
import type { PublicEventType, PublicTrackedEvent, TrackEventBody } from "./schemas/tracking.js";

/**
 * The public name of each proto enum value, derived from the one table of public names to proto
 * values, so the two directions cannot drift; UNSPECIFIED (in no table) has no name.
 */
function namesOf<Name extends string, Value extends number>(values: Record<Name, Value>): Partial<Record<Value, Name>> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [value, name])) as Partial<
    Record<Value, Name>
  >;
}

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

/** A value a service should never send: a bug on one side of the contract, answered as 500. */
export class ContractViolation extends Error {
  override readonly name = "ContractViolation";
}

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

function required<T>(value: T | undefined, what: string, service = "partners"): T {
  if (value === undefined) throw new ContractViolation(`${what} missing from the ${service} response`);
  return value;
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
    created_at: timestampDate(required(partnership.createdAt, "partnership.created_at")).toISOString(),
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

export function toPublicProgram(program: Program): PublicProgram {
  return {
    product_id: program.productId,
    name: program.name,
    commission_rate_bps: program.commissionRateBps,
    tier2_rate_bps: program.tier2RateBps,
    hold_days: program.holdDays,
    payout_minimum_cents: Number(program.payoutMinimumCents),
    attribution_window_days: program.attributionWindowDays,
    auto_approve: program.autoApprove,
    currency: program.currency,
  };
}

const commissionStatusValues: Record<PublicCommissionStatus, CommissionStatus> = {
  pending: CommissionStatus.PENDING,
  approved: CommissionStatus.APPROVED,
  paid: CommissionStatus.PAID,
  rejected: CommissionStatus.REJECTED,
  refunded: CommissionStatus.REFUNDED,
};
const commissionStatusNames = namesOf(commissionStatusValues);

const eventTypeValues: Record<PublicEventType, EventType> = {
  click: EventType.CLICK,
  signup: EventType.SIGNUP,
  payment: EventType.PAYMENT,
};
const eventTypeNames = namesOf(eventTypeValues);

const periodValues: Record<PublicPeriod, Period> = {
  "7d": Period.PERIOD_7D,
  "30d": Period.PERIOD_30D,
  "90d": Period.PERIOD_90D,
  "12m": Period.PERIOD_12M,
};

export function commissionStatusName(status: CommissionStatus): PublicCommissionStatus {
  const name = commissionStatusNames[status];
  if (!name) throw new ContractViolation(`commission status ${status} has no public name`);
  return name;
}

export function commissionStatusValue(name: PublicCommissionStatus): CommissionStatus {
  return commissionStatusValues[name];
}

export function periodValue(name: PublicPeriod): Period {
  return periodValues[name];
}

/** A timestamp the ledger always sets, as ISO 8601 UTC with milliseconds. */
function ledgerTime(value: Parameters<typeof timestampDate>[0] | undefined, what: string): string {
  return timestampDate(required(value, what, "ledger")).toISOString();
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
    hold_until: ledgerTime(commission.holdUntil, "commission.hold_until"),
    created_at: ledgerTime(commission.createdAt, "commission.created_at"),
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

/** The ledger's TrackRequest fields of a validated POST /events body (bigint money, Date times). */
export function toTrackRequest(body: TrackEventBody) {
  return {
    type: eventTypeValues[body.type],
    referralCode: body.referral_code,
    visitorId: body.visitor_id,
    customerEmail: body.customer_email,
    providerCustomerId: body.provider_customer_id,
    amountCents: body.amount_cents === undefined ? undefined : BigInt(body.amount_cents),
    externalId: body.external_id,
    occurredAt: body.occurred_at === undefined ? undefined : timestampFromDate(body.occurred_at),
    ip: body.ip,
    userAgent: body.user_agent,
  };
}

export function toPublicTrackedEvent(event: TrackedEvent | undefined): PublicTrackedEvent {
  const tracked = required(event, "event", "ledger");
  const type = eventTypeNames[tracked.type];
  if (!type) throw new ContractViolation(`event type ${tracked.type} has no public name`);
  return {
    id: tracked.id,
    type,
    partnership_id: tracked.partnershipId || null,
    visitor_id: tracked.visitorId || null,
    occurred_at: ledgerTime(tracked.occurredAt, "event.occurred_at"),
    test_mode: tracked.testMode,
    commissions: tracked.commissions.map((commission) => ({
      id: commission.id || null,
      level: commission.level,
      amount_cents: Number(commission.amountCents),
      status: commissionStatusName(commission.status),
    })),
  };
}

function toPublicMetrics(metrics: Metrics | undefined) {
  const { clicks, signups, conversions, revenueCents, commissionsCents } = required(metrics, "metrics", "ledger");
  return {
    clicks: Number(clicks),
    signups: Number(signups),
    conversions: Number(conversions),
    revenue_cents: revenueCents,
    commissions_cents: commissionsCents,
  };
}

export function toPublicStats(period: PublicPeriod, stats: GetStatsResponse, activeAffiliates: number): PublicStats {
  return {
    period,
    ...toPublicMetrics(stats.current),
    conversion_rate: stats.conversionRate,
    active_affiliates: activeAffiliates,
    previous_period: toPublicMetrics(stats.previous),
  };
}

const dayMs = 24 * 3600 * 1000;

/** The ledger's columns as the public points: day i is first_date plus i days. */
export function toPublicTimeseries(response: GetTimeseriesResponse): PublicTimeseriesPoint[] {
  const { firstDate, clicks, signups, conversions, revenueCents, commissionsCents } = response;
  const days = clicks.length;
  const first = Date.parse(`${firstDate}T00:00:00Z`);
  if ([signups, conversions, revenueCents, commissionsCents].some((column) => column.length !== days)) {
    throw new ContractViolation("time series columns of different lengths in the ledger response");
  }
  if (days > 0 && Number.isNaN(first))
    throw new ContractViolation(`time series first_date "${firstDate}" is not a date`);
  return Array.from({ length: days }, (_, i) => ({
    date: new Date(first + i * dayMs).toISOString().slice(0, 10),
    clicks: Number(clicks[i]),
    signups: Number(signups[i]),
    conversions: Number(conversions[i]),
    revenue_cents: revenueCents[i] as bigint,
    commissions_cents: commissionsCents[i] as bigint,
  }));
}

/** The spec 4.9 refund answer of the ledger's result (the payment's level-1 commission). */
export function toPublicRefund(result: RefundResult | undefined): PublicRefundResult {
  const refund = required(result, "refund result", "ledger");
  return {
    commission_id: refund.commissionId,
    partnership_id: refund.partnershipId,
    payment_amount_cents: Number(refund.paymentAmountCents),
    refund_amount_cents: Number(refund.refundAmountCents),
    previous_commission_cents: Number(refund.previousCommissionCents),
    new_commission_cents: Number(refund.newCommissionCents),
    status: commissionStatusName(refund.status),
    fully_refunded: refund.fullyRefunded,
  };
}

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
  const time = (value: Parameters<typeof timestampDate>[0] | undefined) =>
    value === undefined ? null : timestampDate(value).toISOString();
  return {
    id: payout.id,
    status: deleted ? "rejected" : payoutStatusName(payout.status),
    amount_cents: payout.amountCents,
    adjustment_cents: payout.adjustmentCents,
    partnership_id: payout.partnershipId,
    affiliate: { id: affiliate.id, email: affiliate.email, name: affiliate.name },
    commission_count: Number(payout.commissionCount),
    created_at: timestampDate(required(payout.createdAt, "payout.created_at", "payouts")).toISOString(),
    approved_at: time(payout.approvedAt),
    paid_at: time(payout.paidAt),
    gateway_transfer_id: payout.gatewayTransferId || null,
  };
}

const erasureStatusNames: Partial<Record<ErasureStatus, PublicErasure["status"]>> = {
  [ErasureStatus.RUNNING]: "running",
  [ErasureStatus.COMPLETED]: "completed",
};

/** An erasure receipt in contract 9a's shape. */
export function toPublicErasure(erasure: Erasure): PublicErasure {
  const time = (value: Parameters<typeof timestampDate>[0] | undefined) =>
    value === undefined ? null : timestampDate(value).toISOString();
  return {
    id: erasure.id,
    status: required(erasureStatusNames[erasure.status], `erasure ${erasure.id} status`, "privacy"),
    requested_at: timestampDate(required(erasure.requestedAt, "erasure.requested_at", "privacy")).toISOString(),
    completed_at: time(erasure.completedAt),
    stores: erasure.stores.map(({ store, records }) => ({ store, records: Number(records) })),
    verified_at: time(erasure.verifiedAt),
  };
}

/**
 * Spec 4.11's answer from a completed erasure's receipt: the stores it names, summed over the
 * owners that have them (0 for an owner not deployed, e.g. no notifier means no deliveries).
 */
export function toPublicErasureAnswer(erasure: Erasure): PublicErasureAnswer {
  const records = (store: string) =>
    erasure.stores.filter((count) => count.store === store).reduce((sum, count) => sum + Number(count.records), 0);
  return {
    anonymized: {
      tracking_events: records("tracking_events"),
      webhook_deliveries: records("webhook_deliveries"),
      affiliate_profiles_scrubbed: records("affiliate_profiles"),
    },
    erasure_id: erasure.id,
  };
}
