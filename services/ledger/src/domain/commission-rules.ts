/**
 * The commission rules (contract section 12): what a live payment earns, given its partnership,
 * that partnership's sponsor and the payment's place in its customer's history (numbered by
 * number-payments.ts). Pure.
 */
import { commissionAmount } from "./money.js";
import type {
  Attribution,
  CommissionDecision,
  CommissionSkipped,
  CommissionTerms,
  EarnedCommission,
  PaymentHistory,
} from "./types.js";

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
