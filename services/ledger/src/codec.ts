import { DomainError, fromProtoEnum, toStatus } from "@affiliate/platform";
import {
  type Commission as CommissionProto,
  CommissionReviewSchema,
  type CommissionRule as CommissionRuleProto,
  CommissionRuleSchema,
  CommissionSchema,
  CommissionSkipped as CommissionSkippedProto,
  CommissionStatus as CommissionStatusProto,
  EventType as EventTypeProto,
  FraudFlagSchema,
  type GetTimeseriesResponseSchema,
  HoldReason as HoldReasonProto,
  HoldResolution as HoldResolutionProto,
  type Metrics as MetricsProto,
  MetricsSchema,
  Period as PeriodProto,
  type PreviewCommissionsResponseSchema,
  type RefundResult as RefundResultProto,
  RefundResultSchema,
  ReviewDecision as ReviewDecisionProto,
  RuleSource,
  RuleType,
  type TrackBatchResult,
  TrackBatchResultSchema,
  type TrackedEvent as TrackedEventProto,
  TrackedEventSchema,
  type TrackRequest,
  type TrackResponseSchema,
} from "@affiliate/proto/ledger";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type {
  Commission,
  CommissionPreview,
  CommissionRule,
  CommissionSkipped,
  CommissionStatus,
  FraudFlag,
  HoldReason,
  HoldResolution,
  Metrics,
  Period,
  ReferralSource,
  RefundResult,
  ReviewDecision,
  TrackedEvent,
  TrackInput,
  TrackingEventType,
  TrackOutcome,
  TrackResult,
} from "./domain/types.js";
import { referralSources } from "./domain/types.js";

export const commissionStatusToProto: Record<CommissionStatus, CommissionStatusProto> = {
  pending: CommissionStatusProto.PENDING,
  approved: CommissionStatusProto.APPROVED,
  paid: CommissionStatusProto.PAID,
  rejected: CommissionStatusProto.REJECTED,
  refunded: CommissionStatusProto.REFUNDED,
};

export const holdReasonToProto: Record<HoldReason, HoldReasonProto> = {
  dispute: HoldReasonProto.DISPUTE,
  review: HoldReasonProto.REVIEW,
};

export const reviewDecisionToProto: Record<ReviewDecision, ReviewDecisionProto> = {
  approve: ReviewDecisionProto.APPROVE,
  reject: ReviewDecisionProto.REJECT,
};

/** Flags on the wire: the evidence as a JSON object's text. */
const flagsToProto = (flags: readonly FraudFlag[]) =>
  flags.map((flag) => create(FraudFlagSchema, { signal: flag.signal, evidenceJson: JSON.stringify(flag.evidence) }));

export const holdResolutionToProto: Record<HoldResolution, HoldResolutionProto> = {
  lifted: HoldResolutionProto.LIFTED,
  refunded: HoldResolutionProto.REFUNDED,
};

export const eventTypeToProto: Record<TrackingEventType, EventTypeProto> = {
  click: EventTypeProto.CLICK,
  signup: EventTypeProto.SIGNUP,
  payment: EventTypeProto.PAYMENT,
};

export const periodFromProto: Partial<Record<PeriodProto, Period>> = {
  [PeriodProto.PERIOD_7D]: "7d",
  [PeriodProto.PERIOD_30D]: "30d",
  [PeriodProto.PERIOD_90D]: "90d",
  [PeriodProto.PERIOD_12M]: "12m",
};

export const commissionSkippedToProto: Record<CommissionSkipped, CommissionSkippedProto> = {
  max_commission_months: CommissionSkippedProto.MAX_COMMISSION_MONTHS,
  max_commission_payments: CommissionSkippedProto.MAX_COMMISSION_PAYMENTS,
};

const skippedToProto = (skipped: CommissionSkipped | null) =>
  skipped === null ? CommissionSkippedProto.UNSPECIFIED : commissionSkippedToProto[skipped];

export function commissionRuleToProto(rule: CommissionRule): CommissionRuleProto {
  return create(CommissionRuleSchema, {
    source: rule.source === "partnership" ? RuleSource.PARTNERSHIP : RuleSource.PROGRAM,
    type: rule.type === "flat" ? RuleType.FLAT : RuleType.PERCENT,
    rateBps: rule.rateBps ?? undefined,
    flatCents: rule.flatCents === null ? undefined : BigInt(rule.flatCents),
    paymentNumber: rule.paymentNumber,
    firstPaymentAt: timestampFromDate(rule.firstPaymentAt),
  });
}

export function previewToProto(preview: CommissionPreview): MessageInitShape<typeof PreviewCommissionsResponseSchema> {
  return {
    partnershipId: preview.partnershipId ?? "",
    commissions: preview.commissions.map((c) => ({
      level: c.level,
      partnershipId: c.partnershipId,
      amountCents: BigInt(c.amountCents),
      rule: commissionRuleToProto(c.rule),
    })),
    commissionSkipped: skippedToProto(preview.skipped),
    alreadyRecorded: preview.alreadyRecorded,
  };
}

export function commissionToProto(c: Commission): CommissionProto {
  return create(CommissionSchema, {
    id: c.id,
    productId: c.productId,
    partnershipId: c.partnershipId,
    amountCents: BigInt(c.amountCents),
    status: commissionStatusToProto[c.status],
    level: c.level,
    parentCommissionId: c.parentCommissionId ?? "",
    holdUntil: timestampFromDate(c.holdUntil),
    createdAt: timestampFromDate(c.createdAt),
    referralCode: c.referralCode,
    customerEmail: c.customerEmail ?? undefined,
    paymentAmountCents: BigInt(c.paymentAmountCents),
    payoutId: c.payoutId ?? "",
    eventId: c.eventId,
    reason: c.reason ?? "",
    rule: c.rule ? commissionRuleToProto(c.rule) : undefined,
    holdReason: c.holdReason === null ? HoldReasonProto.UNSPECIFIED : holdReasonToProto[c.holdReason],
    flags: flagsToProto(c.flags),
    review: c.review
      ? create(CommissionReviewSchema, {
          decision: reviewDecisionToProto[c.review.decision],
          note: c.review.note,
          key: c.review.key,
          reviewedAt: timestampFromDate(c.review.reviewedAt),
        })
      : undefined,
    attribution: c.attribution ?? "",
  });
}

/** A Track request's referral_source; INVALID_ARGUMENT for one the ledger does not know. */
function referralSourceOf(source: string | undefined): ReferralSource | undefined {
  if (source === undefined) return undefined;
  const known = referralSources.find((name) => name === source);
  if (!known) throw DomainError.invalidField("referral_source", "Must be link, metadata or coupon");
  return known;
}

/** A Track request (alone or in a batch) as the domain's input; INVALID_ARGUMENT for a bad type. */
export function trackInputFromProto(req: TrackRequest): TrackInput {
  const type = fromProtoEnum(eventTypeToProto, req.type);
  if (!type) throw DomainError.invalidField("type", "Type must be click, signup or payment");
  return {
    productId: req.productId,
    testMode: req.testMode,
    type,
    referralCode: req.referralCode,
    referralSource: referralSourceOf(req.referralSource),
    visitorId: req.visitorId,
    customerEmail: req.customerEmail,
    providerCustomerId: req.providerCustomerId,
    amountCents: req.amountCents === undefined ? undefined : Number(req.amountCents),
    externalId: req.externalId,
    occurredAt: req.occurredAt ? timestampDate(req.occurredAt) : undefined,
    ip: req.ip,
    userAgent: req.userAgent,
    ipHash: req.ipHash,
    referrerHost: req.referrerHost,
    traceContext: Object.keys(req.traceContext).length > 0 ? req.traceContext : undefined,
  };
}

export function trackResultToProto(result: TrackResult): MessageInitShape<typeof TrackResponseSchema> {
  return { event: trackedEventToProto(result.event), replayed: result.replayed };
}

/** One event's outcome in a batch: its Track response, or its error as a Status. */
export function trackOutcomeToProto(outcome: TrackOutcome | DomainError): TrackBatchResult {
  if (outcome instanceof DomainError)
    return create(TrackBatchResultSchema, { outcome: { case: "error", value: toStatus(outcome) } });
  if (outcome.error)
    return create(TrackBatchResultSchema, { outcome: { case: "error", value: toStatus(outcome.error) } });
  return create(TrackBatchResultSchema, { outcome: { case: "tracked", value: trackResultToProto(outcome.result) } });
}

export function trackedEventToProto(e: TrackedEvent): TrackedEventProto {
  return create(TrackedEventSchema, {
    id: e.id,
    type: eventTypeToProto[e.type],
    partnershipId: e.partnershipId ?? "",
    visitorId: e.visitorId ?? "",
    occurredAt: timestampFromDate(e.occurredAt),
    testMode: e.testMode,
    commissions: e.commissions.map((c) => ({
      id: c.id ?? "",
      level: c.level,
      amountCents: BigInt(c.amountCents),
      status: commissionStatusToProto[c.status],
    })),
    commissionSkipped: skippedToProto(e.commissionSkipped),
    flags: flagsToProto(e.flags),
  });
}

export function metricsToProto(m: Metrics): MetricsProto {
  return create(MetricsSchema, {
    clicks: BigInt(m.clicks),
    signups: BigInt(m.signups),
    conversions: BigInt(m.conversions),
    revenueCents: BigInt(m.revenueCents),
    commissionsCents: BigInt(m.commissionsCents),
  });
}

/** A series of consecutive days, oldest first, as GetTimeseriesResponse's columns. */
export function timeseriesToProto(
  points: { date: string; metrics: Metrics }[],
): MessageInitShape<typeof GetTimeseriesResponseSchema> {
  const column = (metric: keyof Metrics) => points.map((point) => BigInt(point.metrics[metric]));
  return {
    firstDate: points[0]?.date ?? "",
    clicks: column("clicks"),
    signups: column("signups"),
    conversions: column("conversions"),
    revenueCents: column("revenueCents"),
    commissionsCents: column("commissionsCents"),
  };
}

export function refundResultToProto(r: RefundResult): RefundResultProto {
  return create(RefundResultSchema, {
    commissionId: r.commissionId,
    partnershipId: r.partnershipId,
    paymentAmountCents: BigInt(r.paymentAmountCents),
    refundAmountCents: BigInt(r.refundAmountCents),
    previousCommissionCents: BigInt(r.previousCommissionCents),
    newCommissionCents: BigInt(r.newCommissionCents),
    status: commissionStatusToProto[r.status],
    fullyRefunded: r.fullyRefunded,
  });
}
