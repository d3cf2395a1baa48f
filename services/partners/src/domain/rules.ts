import { createHash, randomBytes, randomInt } from "node:crypto";
import {
  characterCount,
  DomainError,
  type FieldErrors,
  isValidEmail,
  normalizeEmail,
  referralCodePattern,
} from "@affiliate/platform";
import type { KeyMode, PartnershipStatus, ProgramChanges, Registration } from "./types.js";

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
  return errors;
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

/** Range checks of program settings (contract section 3), keyed by the public field names. */
export function programChangeErrors(changes: ProgramChanges): FieldErrors {
  const errors: FieldErrors = {};
  const check = (field: string, value: number | undefined, min: number, max: number) => {
    if (value !== undefined && (!Number.isInteger(value) || value < min || value > max)) {
      errors[field] = [`Must be an integer from ${min} to ${max}`];
    }
  };
  check("commission_rate_bps", changes.commissionRateBps, 0, 10_000);
  check("tier2_rate_bps", changes.tier2RateBps, 0, 10_000);
  check("hold_days", changes.holdDays, 0, 365);
  check("payout_minimum_cents", changes.payoutMinimumCents, 0, Number.MAX_SAFE_INTEGER);
  check("attribution_window_days", changes.attributionWindowDays, 1, 365);
  return errors;
}

const keyPrefix: Record<KeyMode, string> = { live: "sk_live_", test: "sk_test_" };

/** A new secret key: the mode's prefix and 192 random bits. */
export function generateKey(mode: KeyMode): string {
  return keyPrefix[mode] + randomBytes(24).toString("base64url");
}

/** What is stored instead of a key. */
export function hashKey(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}
