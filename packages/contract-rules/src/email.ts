import { characterCount } from "./text.js";

/**
 * The one email rule of the platform: the services and the public REST shapes normalise and
 * check an address with these two functions, so none passes one check and fails another. Emails are stored and compared trimmed and lowercased, so
 * equality is exact (spec 4.11: "matched exactly against stored values").
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

// Deliberately simple: one @, no spaces, a dot in the domain. Deliverability is the welcome
// email's problem, not a regular expression's.
const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Whether an already normalised email is one the platform accepts (at most 254 characters). */
export function isValidEmail(normalized: string): boolean {
  return characterCount(normalized) <= 254 && emailPattern.test(normalized);
}
