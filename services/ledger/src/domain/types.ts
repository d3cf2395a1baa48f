/**
 * The ledger's own vocabulary, and what its use cases answer: the RPC edge and the events map it
 * to and from proto (codec.ts). It imports nothing of the ledger, so whatever reads it (codec,
 * store, events) depends on no use case.
 */

import type { FraudSettings, FraudSignal } from "@affiliate/contract-rules";
import type { DomainError } from "@affiliate/platform";

export type TrackingEventType = "click" | "signup" | "payment";
export type CommissionStatus = "pending" | "approved" | "paid" | "rejected" | "refunded";
/**
 * Why a commission is held: neither approved by the hold sweep nor claimed by a payout. dispute:
 * its payment is disputed; review: a fraud signal flagged it and the merchant has not decided.
 */
export type HoldReason = "dispute" | "review";
export type Period = "7d" | "30d" | "90d" | "12m";
/**
 * How an event found its partnership (contract section 17): a referral code sent with it
 * (`link`), Stripe metadata (`metadata`), a mapped promotion code (`coupon`), the visitor's click
 * (`visitor`); a payment credited through the customer's signup carries the signup's, or `signup`
 * when that signup predates the record of methods.
 */
export type AttributionMethod = "link" | "metadata" | "coupon" | "visitor" | "signup";
/** Where an event's referral code came from, as its reporter says (the API's is `link`). */
export type ReferralSource = "link" | "metadata" | "coupon";
export const referralSources: readonly ReferralSource[] = ["link", "metadata", "coupon"];

export interface TrackInput {
  productId: string;
  testMode: boolean;
  type: TrackingEventType;
  referralCode?: string | undefined;
  /** Where referralCode came from (default `link`): Stripe metadata, a promotion code. */
  referralSource?: ReferralSource | undefined;
  visitorId?: string | undefined;
  customerEmail?: string | undefined;
  providerCustomerId?: string | undefined;
  amountCents?: number | undefined;
  externalId?: string | undefined;
  occurredAt?: Date | undefined;
  ip?: string | undefined;
  userAgent?: string | undefined;
  /** Clicks the gateway records itself: a keyed hash of the visitor's address, never the address. */
  ipHash?: string | undefined;
  /** Clicks: the referring page's host. */
  referrerHost?: string | undefined;
  /** The trace of the call that reported the event, when it came in a batch of several calls. */
  traceContext?: Record<string, string> | undefined;
}

export interface CommissionSummary {
  /** null for sandbox events: they create nothing. */
  id: string | null;
  level: 1 | 2;
  amountCents: number;
  status: CommissionStatus;
}

export interface TrackedEvent {
  id: string;
  type: TrackingEventType;
  partnershipId: string | null;
  visitorId: string | null;
  occurredAt: Date;
  testMode: boolean;
  commissions: CommissionSummary[];
  /** Why an attributed payment earned nothing; null otherwise. */
  commissionSkipped: CommissionSkipped | null;
  /** A click's fraud flags: a flagged click is stored and counted nowhere. Empty otherwise. */
  flags: FraudFlag[];
}

/** A fraud signal raised on an event, with what was seen (contract section 18; fraud/signals.ts). */
export interface FraudFlag {
  signal: FraudSignal;
  evidence: Record<string, string | number>;
}

export type CommissionType = "percent" | "flat";
/** Why an attributed payment to an active partnership earned nothing (contract section 12). */
export type CommissionSkipped = "max_commission_months" | "max_commission_payments";

/** The rule a commission was made with, frozen at creation (contract section 12). */
export interface CommissionRule {
  /** Whose settings gave the amount: the program's, or the earning partnership's override. */
  source: "program" | "partnership";
  type: CommissionType;
  /** The rate applied; null for a flat amount. */
  rateBps: number | null;
  /** The flat amount applied, before the cap at the payment; null for a percentage. */
  flatCents: number | null;
  /** The payment's number among the customer's attributed payments to the level-1 partnership. */
  paymentNumber: number;
  /** When the customer's first attributed payment to the level-1 partnership occurred. */
  firstPaymentAt: Date;
}

/** A program's commission terms, or a partnership's override of some of them. */
export interface CommissionTerms {
  commissionType: CommissionType;
  commissionRateBps: number;
  commissionFlatCents: number;
  tier2RateBps: number;
  /** null: no limit. */
  maxCommissionMonths: number | null;
  /** null: no limit. */
  maxCommissionPayments: number | null;
}

export interface Commission {
  id: string;
  productId: string;
  partnershipId: string;
  eventId: string;
  level: 1 | 2;
  parentCommissionId: string | null;
  amountCents: number;
  originalAmountCents: number;
  status: CommissionStatus;
  holdUntil: Date;
  referralCode: string;
  customerEmail: string | null;
  paymentAmountCents: number;
  paymentOccurredAt: Date;
  payoutId: string | null;
  reason: string | null;
  /** Set while the payment is disputed and the commission is in no payout; null otherwise. */
  holdReason: HoldReason | null;
  createdAt: Date;
  /** The frozen rule; null for commissions created before rules were recorded. */
  rule: CommissionRule | null;
  /** The fraud signals raised when it was created, with their evidence (contract section 18). */
  flags: FraudFlag[];
  /** The merchant's decision on it once flagged; null until decided. */
  review: CommissionReview | null;
  /** How its payment found the partnership; null for payments recorded before methods were kept. */
  attribution: AttributionMethod | null;
}

export type ReviewDecision = "approve" | "reject";

/** Who decided a flagged commission, how, why and when. */
export interface CommissionReview {
  decision: ReviewDecision;
  note: string;
  /** The key that decided, masked ("sk_live_…abcd"). */
  key: string;
  reviewedAt: Date;
}

/** What partners says about the partnership an event is credited to. */
export interface Attribution {
  partnershipId: string;
  referralCode: string;
  status: "active" | "pending" | "rejected" | "removed";
  activeSponsorPartnershipId: string | null;
  program: CommissionTerms & {
    holdDays: number;
    attributionWindowDays: number;
    fraud: FraudSettings;
  };
  /** The affiliate's email (normalised), for the self-referral check; null when unknown. */
  affiliateEmail: string | null;
  /** The partnership's own terms over the program's: a field left out inherits; null: none. */
  commissionOverride: Partial<CommissionTerms> | null;
}

/**
 * A window's figures. Sums of cents are bigints (contract section 11: totals are exact 64-bit
 * integers end to end); counts are numbers, which no count of events can outgrow.
 */
export interface Metrics {
  clicks: number;
  signups: number;
  conversions: number;
  revenueCents: bigint;
  commissionsCents: bigint;
}

/** No activity. */
export const zeroMetrics: Readonly<Metrics> = {
  clicks: 0,
  signups: 0,
  conversions: 0,
  revenueCents: 0n,
  commissionsCents: 0n,
};

/** A partnership's all-time figures; sums of cents are bigints, as in Metrics. */
export interface PartnershipStats {
  clicks: number;
  conversions: number;
  earnedCents: bigint;
  pendingCount: number;
  approvedCount: number;
  pendingAmountCents: bigint;
  approvedAmountCents: bigint;
}

// ───────────────────────── what the use cases answer ─────────────────────────

/** What Track answers for one event. */
export interface TrackResult {
  event: TrackedEvent;
  /** True when the payment's external_id was already recorded: this is the original. */
  replayed: boolean;
}

/** One event's answer in a batch: what Track would have returned, or the error it would have thrown. */
export type TrackOutcome = { result: TrackResult; error?: undefined } | { error: DomainError; result?: undefined };

/** Where a payment stands in its customer's history with the partnership, fixed when it is recorded. */
export interface PaymentHistory {
  /** 1 for the customer's first attributed payment to the partnership. */
  paymentNumber: number;
  /** When that first payment occurred: the anchor of max_commission_months. */
  firstPaymentAt: Date;
}

/** A commission a payment earns, before it is given an id, a status and a hold. */
export interface EarnedCommission {
  level: 1 | 2;
  partnershipId: string;
  referralCode: string;
  amountCents: number;
  rule: CommissionRule;
}

/** What a payment earns and, when an attributed payment to an active partnership earns nothing, why. */
export interface CommissionDecision {
  commissions: EarnedCommission[];
  skipped: CommissionSkipped | null;
}

/** What PreviewCommissions answers: the decision a payment recorded now would get. */
export interface CommissionPreview extends CommissionDecision {
  /** The partnership the payment would be credited to; null when none. */
  partnershipId: string | null;
  /** A live payment with the input's external_id is recorded already (recording it would replay it). */
  alreadyRecorded: boolean;
}

/** The spec 4.9 response, for the payment's level-1 commission. */
export interface RefundResult {
  commissionId: string;
  partnershipId: string;
  paymentAmountCents: number;
  refundAmountCents: number;
  previousCommissionCents: number;
  newCommissionCents: number;
  status: CommissionStatus;
  fullyRefunded: boolean;
}

/** How a hold ends: lifted (a dispute won), or by refunding the payment in full (a dispute lost). */
export type HoldResolution = "lifted" | "refunded";
