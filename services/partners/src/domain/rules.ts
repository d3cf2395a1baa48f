import { createHash, randomBytes, randomInt } from "node:crypto";
import {
  characterCount,
  clickSignalActions,
  type FraudAction,
  type FraudSettings,
  fraudActions,
  isValidEmail,
  maxCommissionMonthsLimit,
  maxCommissionPaymentsLimit,
  maxFlatCents,
  normalizeEmail,
  referralCodePattern,
  referralUrlTemplateProblem,
} from "@affiliate/contract-rules";
import { DomainError, type FieldErrors } from "@affiliate/platform";
import {
  type CommissionOverride,
  commissionTypes,
  type KeyMode,
  type PartnershipStatus,
  type Program,
  type ProgramChanges,
  type Registration,
} from "./types.js";

/** The field errors of one registration, keyed by the public (camelCase) field names. */
export function registrationErrors(registration: Registration): FieldErrors {
  const errors: FieldErrors = {};
  const email = normalizeEmail(registration.email);
  if (!isValidEmail(email)) errors.email = ["Invalid email address"];
  const { name, referralCode, sponsorReferralCode } = registration;
  if (name !== undefined && (name === "" || characterCount(name) > 200)) {
    errors.name = ["Name must be 1-200 characters"];
  }
  if (referralCode !== undefined && !referralCodePattern.test(referralCode)) {
    errors.referralCode = ["Referral code must be 3-50 letters, digits, hyphens or underscores"];
  }
  if (sponsorReferralCode !== undefined && !referralCodePattern.test(sponsorReferralCode)) {
    errors.sponsorReferralCode = ["No active affiliate of this program has this referral code"];
  }
  const externalIdProblem =
    registration.externalId === undefined ? undefined : externalIdError(registration.externalId);
  if (externalIdProblem) errors.externalId = [externalIdProblem];
  return errors;
}

/** Why an external id is not acceptable (1-128 characters), or undefined when it is. */
export function externalIdError(externalId: string): string | undefined {
  const length = characterCount(externalId);
  return length < 1 || length > 128 ? "External id must be 1-128 characters" : undefined;
}

export function assertValidRegistration(registration: Registration): void {
  const errors = registrationErrors(registration);
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
}

// Unambiguous characters only (no 0/O, 1/I/L), so a code read aloud or typed survives.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/** A fresh referral code: 8 characters, about 40 bits, so collisions are rare and retried. */
export function generateReferralCode(): string {
  let code = "";
  for (let i = 0; i < 8; i++) code += codeAlphabet[randomInt(codeAlphabet.length)];
  return code;
}

/** Status changes a merchant may make (contract section 4). */
const transitions: Record<PartnershipStatus, readonly PartnershipStatus[]> = {
  pending: ["active", "rejected"],
  active: ["removed"],
  rejected: ["active"],
  removed: ["active"],
};

export function canTransition(from: PartnershipStatus, to: PartnershipStatus): boolean {
  return transitions[from].includes(to);
}

/**
 * Field errors collected under the public (snake_case) field names; with `parent`, under the
 * parent's name, each message naming its field (`commission_override: ["commission_rate_bps:
 * Must be …"]`), as the gateway reports errors inside an object.
 */
function fieldChecks(parent?: string) {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => {
    const key = parent ?? field;
    errors[key] = [...(errors[key] ?? []), parent ? `${field}: ${message}` : message];
  };
  const integer = (field: string, value: number | null | undefined, min: number, max: number) => {
    if (value !== undefined && value !== null && (!Number.isSafeInteger(value) || value < min || value > max)) {
      add(field, `Must be an integer from ${min} to ${max.toLocaleString("en-US")}`);
    }
  };
  return { errors, add, integer };
}

const flatNeedsAmount = "Required, 1 or more, when commission_type is flat";

/** Range checks of program setting changes (contract sections 3 and 12), keyed by the public field names. */
export function programChangeErrors(changes: ProgramChanges): FieldErrors {
  const { errors, add, integer } = fieldChecks();
  integer("commission_rate_bps", changes.commissionRateBps, 0, 10_000);
  integer("tier2_rate_bps", changes.tier2RateBps, 0, 10_000);
  integer("hold_days", changes.holdDays, 0, 365);
  integer("payout_minimum_cents", changes.payoutMinimumCents, 0, Number.MAX_SAFE_INTEGER);
  integer("attribution_window_days", changes.attributionWindowDays, 1, 365);
  if (changes.commissionType !== undefined && !commissionTypes.includes(changes.commissionType)) {
    add("commission_type", "Must be percent or flat");
  }
  integer("commission_flat_cents", changes.commissionFlatCents, 0, maxFlatCents);
  integer("max_commission_months", changes.maxCommissionMonths, 1, maxCommissionMonthsLimit);
  integer("max_commission_payments", changes.maxCommissionPayments, 1, maxCommissionPaymentsLimit);
  if (changes.referralUrlTemplate !== undefined && changes.referralUrlTemplate !== null) {
    const problem = referralUrlTemplateProblem(changes.referralUrlTemplate);
    if (problem) add("referral_url_template", problem);
  }
  fraudChangeErrors(changes.fraud ?? {}, errors);
  return errors;
}

/**
 * The fraud settings' checks (contract section 18), under `fraud`, each message naming its
 * signal: a click signal is flagged or off (a click carries no money to reject, and a flagged
 * one already counts nowhere); the threshold is 1-10000 basis points or null.
 */
function fraudChangeErrors(fraud: Partial<FraudSettings>, into: FieldErrors): void {
  const { errors, add, integer } = fieldChecks("fraud");
  const actions: [string, FraudAction | undefined, readonly FraudAction[]][] = [
    ["self_referral", fraud.selfReferral, fraudActions],
    ["refund_rate", fraud.refundRate, fraudActions],
    ["duplicate_click", fraud.duplicateClick, clickSignalActions],
    ["bot", fraud.bot, clickSignalActions],
  ];
  for (const [signal, action, allowed] of actions) {
    if (action !== undefined && !allowed.includes(action))
      add(signal, `Must be ${allowed.join(", ").replace(/, (?=[^,]*$)/, " or ")}`);
  }
  integer("refund_rate_threshold_bps", fraud.refundRateThresholdBps, 1, 10_000);
  Object.assign(into, errors);
}

/**
 * What the settings must satisfy together once a change is applied: a flat program has an
 * amount (a flat commission of nothing would silently pay nothing).
 */
export function programErrors(program: Program): FieldErrors {
  const { errors, add } = fieldChecks();
  if (program.commissionType === "flat" && program.commissionFlatCents < 1)
    add("commission_flat_cents", flatNeedsAmount);
  return errors;
}

/**
 * The errors of a partnership's commission override (contract section 12), under
 * `commission_override`, each message naming its field. Its values follow the program's ranges; a limit may be null (no
 * limit for this partnership). An override that makes the partnership flat carries its own amount,
 * so what it earns does not hang on the program's amount of another type.
 */
export function commissionOverrideErrors(override: CommissionOverride): FieldErrors {
  const { errors, add, integer } = fieldChecks("commission_override");
  if (override.commissionType !== undefined && !commissionTypes.includes(override.commissionType)) {
    add("commission_type", "Must be percent or flat");
  }
  integer("commission_rate_bps", override.commissionRateBps, 0, 10_000);
  integer("tier2_rate_bps", override.tier2RateBps, 0, 10_000);
  integer("commission_flat_cents", override.commissionFlatCents, 0, maxFlatCents);
  integer("max_commission_months", override.maxCommissionMonths, 1, maxCommissionMonthsLimit);
  integer("max_commission_payments", override.maxCommissionPayments, 1, maxCommissionPaymentsLimit);
  if (
    override.commissionType === "flat" &&
    !(override.commissionFlatCents !== undefined && override.commissionFlatCents >= 1)
  ) {
    add("commission_flat_cents", flatNeedsAmount);
  }
  return errors;
}

const keyPrefix: Record<KeyMode, string> = {
  live: "sk_live_",
  test: "sk_test_",
  publishable_live: "pk_live_",
  publishable_test: "pk_test_",
};

const keyAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Characters after the prefix: 33 of 62 carry 196 bits. */
const keyLength = 33;

/**
 * A new key: the mode's prefix and 196 random bits in letters and digits only. A `-` (as base64url
 * has) ends the word a double-click selects in a terminal or an editor, and a pattern such as
 * `sk_live_\w+` that a user greps logs or pastes with would cut the key there.
 */
export function generateKey(mode: KeyMode): string {
  const chars: string[] = [];
  while (chars.length < keyLength) {
    for (const byte of randomBytes(keyLength)) {
      // 248 = 4 x 62: larger bytes are dropped, so every character is equally likely.
      if (byte < 248 && chars.length < keyLength) chars.push(keyAlphabet.charAt(byte % 62));
    }
  }
  return keyPrefix[mode] + chars.join("");
}

/**
 * What is stored instead of a secret credential (an API key, an affiliate token, a console
 * session, a login code): its sha256, so a database dump holds no usable credential.
 */
export function storedHashOf(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}
