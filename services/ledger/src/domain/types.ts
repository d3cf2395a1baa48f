/** The ledger's own vocabulary; the RPC edge maps it to and from proto. */
import type { FraudSettings } from "@affiliate/platform";
import type { FraudFlag } from "./fraud/signals.js";

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
