/**
 * The bounds of amounts and commission terms (contract sections 5 and 12): the services and
 * the public REST shapes check the same.
 */

/** The largest payment accepted: one billion in the major unit. */
export const maxPaymentCents = 100_000_000_000;
/** The largest flat commission: the largest payment (a flat amount is capped at the payment). */
export const maxFlatCents = maxPaymentCents;
/** The longest commission period, in calendar months (ten years). */
export const maxCommissionMonthsLimit = 120;
/** The most payments of one customer that may earn. */
export const maxCommissionPaymentsLimit = 1000;
/** The longest referral link template, in characters. */
export const maxReferralUrlTemplateLength = 2000;

/**
 * Why a referral link template is not acceptable, or undefined when it is: an http(s) URL that
 * contains `{code}` (replaced by the affiliate's referral code).
 */
export function referralUrlTemplateProblem(template: string): string | undefined {
  if (template.length > maxReferralUrlTemplateLength) {
    return `Must be at most ${maxReferralUrlTemplateLength} characters`;
  }
  if (!template.includes("{code}")) return "Must contain {code}, where the referral code goes";
  let url: URL;
  try {
    url = new URL(template.replaceAll("{code}", "CODE"));
  } catch {
    return "Must be an http(s) URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "Must be an http(s) URL";
  return undefined;
}
