/**
 * What a tracked event must be before anything is attributed or written (contract section 5):
 * the field rules every event of Track, TrackBatch and PreviewCommissions passes, and the visitor
 * id a click gets when it came without one. Commission rules are in commission-rules.ts.
 */
import { randomBytes } from "node:crypto";
import {
  characterCount,
  isValidEmail,
  maxPaymentCents,
  normalizeEmail,
  referralCodePattern,
} from "@affiliate/contract-rules";
import type { FieldErrors } from "@affiliate/platform";
import type { TrackInput } from "./types.js";

const maxFutureSkewMs = 5 * 60 * 1000;
const maxPastMs = 400 * 24 * 3600 * 1000;

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
