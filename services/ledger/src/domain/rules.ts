import { createHash, randomBytes } from "node:crypto";
import {
  characterCount,
  type FieldErrors,
  isValidEmail,
  maxPaymentCents,
  normalizeEmail,
  referralCodePattern,
} from "@affiliate/platform";
import { commissionAmount } from "./money.js";
import type { Attribution, CommissionRule, CommissionSkipped, CommissionTerms, TrackInput } from "./types.js";

export { maxPaymentCents };
export const maxFutureSkewMs = 5 * 60 * 1000;
export const maxPastMs = 400 * 24 * 3600 * 1000;

/** A visitor id for a click that came without one. */
export function newVisitorId(): string {
  return `vis_${randomBytes(12).toString("hex")}`;
}

/**
 * The tracking rules of contract section 5, keyed by the public (snake_case) field names. The
 * gateway validates the same shape; the ledger checks again because it trusts no caller.
 */
export function trackErrors(input: TrackInput, now: Date): FieldErrors {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => {
    errors[field] = [...(errors[field] ?? []), message];
  };
  const optionalText = (field: string, value: string | undefined, max: number) => {
    if (value === undefined) return;
    const length = characterCount(value);
    if (length < 1 || length > max) add(field, `Must be 1-${max} characters`);
  };
  if (input.referralCode !== undefined && !referralCodePattern.test(input.referralCode)) {
    add("referral_code", "Must be 3-50 letters, digits, hyphens or underscores");
  }
  optionalText("visitor_id", input.visitorId, 128);
  optionalText("provider_customer_id", input.providerCustomerId, 255);
  optionalText("external_id", input.externalId, 255);
  optionalText("ip", input.ip, 64);
  optionalText("user_agent", input.userAgent, 1024);
  optionalText("ip_hash", input.ipHash, 128);
  if (input.referralSource !== undefined && input.referralCode === undefined) {
    add("referral_source", "Only with a referral_code");
  }
  optionalText("referrer_host", input.referrerHost, 255);
  if (input.customerEmail !== undefined) {
    const email = normalizeEmail(input.customerEmail);
    if (!isValidEmail(email)) add("customer_email", "Invalid email address");
  }
  if (input.type === "click") {
    if (input.referralCode === undefined) add("referral_code", "Required for a click");
    for (const [field, value] of [
      ["customer_email", input.customerEmail],
      ["provider_customer_id", input.providerCustomerId],
      ["amount_cents", input.amountCents],
      ["external_id", input.externalId],
    ] as const) {
      if (value !== undefined) add(field, "Not accepted on a click");
    }
  }
  if (input.type === "payment") {
    if (input.amountCents === undefined) add("amount_cents", "Required for a payment");
    else if (
      !Number.isSafeInteger(input.amountCents) ||
      input.amountCents <= 0 ||
      input.amountCents > maxPaymentCents
    ) {
      add("amount_cents", "Must be an integer from 1 to 100,000,000,000 cents");
    }
  } else {
    if (input.type === "signup" && input.amountCents !== undefined)
      add("amount_cents", "Only payments carry an amount");
    if (input.type === "signup" && input.externalId !== undefined)
      add("external_id", "Only payments carry an external_id");
  }
  if (input.occurredAt !== undefined) {
    const at = input.occurredAt.getTime();
    if (Number.isNaN(at)) add("occurred_at", "Invalid timestamp");
    else if (at > now.getTime() + maxFutureSkewMs) add("occurred_at", "Must not be more than 5 minutes in the future");
    else if (at < now.getTime() - maxPastMs) add("occurred_at", "Must not be more than 400 days in the past");
  }
  return errors;
}

// ───────────────────────── commission rules (contract section 12) ─────────────────────────

/**
 * `at` plus `months` calendar months, in UTC, keeping the time of day. A day of the month the
 * target month lacks is clamped to its last day: Jan 31 + 1 month is Feb 28 (Feb 29 in a leap
 * year), Feb 29 + 12 months is Feb 28, Mar 31 + 1 month is Apr 30. This is how billing
 * providers (Stripe among them) place a monthly renewal of a subscription started on the 31st,
 * so "12 months" ends where the 13th monthly charge falls.
 */
export function addCalendarMonths(at: Date, months: number): Date {
  const monthIndex = at.getUTCFullYear() * 12 + at.getUTCMonth() + months;
  const year = Math.floor(monthIndex / 12);
  const month = monthIndex - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(at.getUTCDate(), lastDay),
      at.getUTCHours(),
      at.getUTCMinutes(),
      at.getUTCSeconds(),
      at.getUTCMilliseconds(),
    ),
  );
}

/**
 * Who "the customer" is for the limits: provider_customer_id, else the (normalised) email, as a
 * SHA-256 key so the counters hold neither. undefined for a payment with neither: it is its own
 * first payment.
 */
export function customerKey(payment: {
  providerCustomerId?: string | null | undefined;
  customerEmail?: string | null | undefined;
}): string | undefined {
  const identity =
    payment.providerCustomerId != null
      ? `pcid:${payment.providerCustomerId}`
      : payment.customerEmail != null
        ? `email:${payment.customerEmail}`
        : undefined;
  return identity === undefined ? undefined : createHash("sha256").update(identity, "utf8").digest("hex");
}

/** Where a payment stands in its customer's history with the partnership, fixed when it is recorded. */
export interface PaymentHistory {
  /** 1 for the customer's first attributed payment to the partnership. */
  paymentNumber: number;
  /** When that first payment occurred: the anchor of max_commission_months. */
  firstPaymentAt: Date;
}

/** The history of a payment with no earlier payment of its customer (or no customer at all). */
export const firstPayment = (occurredAt: Date): PaymentHistory => ({ paymentNumber: 1, firstPaymentAt: occurredAt });

/**
 * The history of the payment after `recorded` earlier ones (anchored at `firstPaymentAt` when
 * there were any).
 */
export function nextPayment(recorded: { payments: number; firstPaymentAt: Date } | undefined, occurredAt: Date) {
  return recorded && recorded.payments > 0
    ? { paymentNumber: recorded.payments + 1, firstPaymentAt: recorded.firstPaymentAt }
    : firstPayment(occurredAt);
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

/** Whether the override gave the terms of a level-1 amount: its type, or the rate or flat amount applied. */
function amountTermsOverridden(override: Attribution["commissionOverride"], flat: boolean): boolean {
  if (!override) return false;
  return (
    override.commissionType !== undefined ||
    (flat ? override.commissionFlatCents !== undefined : override.commissionRateBps !== undefined)
  );
}

/** The partnership's terms: each field of its override, else the program's. */
export function effectiveTerms(attribution: Attribution): CommissionTerms {
  const { program, commissionOverride } = attribution;
  const override = commissionOverride ?? {};
  const pick = <K extends keyof CommissionTerms>(field: K): CommissionTerms[K] =>
    override[field] !== undefined ? (override[field] as CommissionTerms[K]) : program[field];
  return {
    commissionType: pick("commissionType"),
    commissionRateBps: pick("commissionRateBps"),
    commissionFlatCents: pick("commissionFlatCents"),
    tier2RateBps: pick("tier2RateBps"),
    maxCommissionMonths: pick("maxCommissionMonths"),
    maxCommissionPayments: pick("maxCommissionPayments"),
  };
}

/** The limit a payment is past, if any; the month limit is named first when both are. */
function limitReached(terms: CommissionTerms, occurredAt: Date, history: PaymentHistory): CommissionSkipped | null {
  if (
    terms.maxCommissionMonths !== null &&
    occurredAt.getTime() >= addCalendarMonths(history.firstPaymentAt, terms.maxCommissionMonths).getTime()
  ) {
    return "max_commission_months";
  }
  if (terms.maxCommissionPayments !== null && history.paymentNumber > terms.maxCommissionPayments) {
    return "max_commission_payments";
  }
  return null;
}

/**
 * What a live payment earns (contract section 12): the single place the rules are applied, by
 * recording (Track, TrackBatch), sandbox answers and the preview alike, so a preview cannot
 * disagree with the payment recorded next. Pure: the caller supplies the partnership (and its
 * active sponsor, if any) as partners describes them and the payment's history.
 *
 * - Only an active partnership earns.
 * - A payment past the partnership's month or payment limit earns nothing and says which.
 * - Level 1: a percentage of the payment, or the flat amount capped at the payment.
 * - Level 2, only where level 1 earned: the sponsor's tier2 rate (its override, else the
 *   program's) of the payment, always a percentage.
 * - Each commission carries its rule: `partnership` when the override gave the amount's terms.
 */
export function decideCommissions(
  payment: { amountCents: number; occurredAt: Date },
  earner: Attribution,
  sponsor: Attribution | undefined,
  history: PaymentHistory,
): CommissionDecision {
  if (earner.status !== "active") return { commissions: [], skipped: null };
  const terms = effectiveTerms(earner);
  const skipped = limitReached(terms, payment.occurredAt, history);
  if (skipped) return { commissions: [], skipped };

  const flat = terms.commissionType === "flat";
  const levelOne: EarnedCommission = {
    level: 1,
    partnershipId: earner.partnershipId,
    referralCode: earner.referralCode,
    amountCents: flat
      ? Math.min(terms.commissionFlatCents, payment.amountCents)
      : commissionAmount(payment.amountCents, terms.commissionRateBps),
    rule: {
      source: amountTermsOverridden(earner.commissionOverride, flat) ? "partnership" : "program",
      type: terms.commissionType,
      rateBps: flat ? null : terms.commissionRateBps,
      flatCents: flat ? terms.commissionFlatCents : null,
      ...history,
    },
  };
  if (sponsor?.status !== "active") return { commissions: [levelOne], skipped: null };
  const sponsorOverride = sponsor.commissionOverride?.tier2RateBps;
  const tier2RateBps = sponsorOverride ?? sponsor.program.tier2RateBps;
  return {
    commissions: [
      levelOne,
      {
        level: 2,
        partnershipId: sponsor.partnershipId,
        referralCode: sponsor.referralCode,
        amountCents: commissionAmount(payment.amountCents, tier2RateBps),
        rule: {
          source: sponsorOverride === undefined ? "program" : "partnership",
          type: "percent",
          rateBps: tier2RateBps,
          flatCents: null,
          ...history,
        },
      },
    ],
    skipped: null,
  };
}
