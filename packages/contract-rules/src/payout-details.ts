import { isValidEmail, normalizeEmail } from "./email.js";
import { characterCount } from "./text.js";

/**
 * The one set of rules for affiliates' payout details (contract section 19): the public REST
 * shapes and the partners service, which stores them, check and mask with these functions, so no
 * detail passes one check and fails the other. Details are stored normalised: emails trimmed and
 * lowercased, IBANs without spaces and uppercased, currencies uppercased.
 */
export type PayoutDetails = PaypalDetails | WiseDetails;

export interface PaypalDetails {
  type: "paypal";
  email: string;
}

export type WiseReceiverType = "person" | "institution";

export interface WiseDetails {
  type: "wise";
  accountHolderName: string;
  /** Required when there is no IBAN: Wise then asks the recipient for bank details by email. */
  email: string | undefined;
  iban: string | undefined;
  /** What the recipient receives; undefined: the program's currency. */
  currency: string | undefined;
  receiverType: WiseReceiverType;
}

/** Field name (as the REST body spells it) to messages. */
export type PayoutDetailsProblems = Record<string, string[]>;

export const maxAccountHolderNameLength = 140;

/** IBAN lengths by country (the IBAN registry's), for the countries Wise pays to by IBAN. */
const ibanLengths: Record<string, number> = {
  AD: 24,
  AE: 23,
  AT: 20,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  TN: 24,
  TR: 26,
  UA: 29,
  VG: 24,
  XK: 20,
};

/** An IBAN as stored: spaces removed, letters uppercased. */
export const normalizeIban = (iban: string): string => iban.replace(/\s+/g, "").toUpperCase();

/** Why a normalised IBAN is not one, or undefined when it is (country, length and mod-97 check). */
export function ibanProblem(iban: string): string | undefined {
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(iban)) {
    return "Must be an IBAN: 2 letters, 2 check digits, then 11-30 letters or digits";
  }
  const expected = ibanLengths[iban.slice(0, 2)];
  if (expected === undefined) return `IBANs of country ${iban.slice(0, 2)} are not accepted`;
  if (iban.length !== expected) return `An IBAN of ${iban.slice(0, 2)} has ${expected} characters`;
  // ISO 13616: the first four characters move to the end, letters become 10-35, and the number
  // leaves 1 modulo 97. Folded digit by digit, so no big number is needed.
  let remainder = 0;
  for (const char of iban.slice(4) + iban.slice(0, 4)) {
    const digits = /[0-9]/.test(char) ? char : String(char.charCodeAt(0) - 55);
    for (const digit of digits) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder === 1 ? undefined : "The IBAN's check digits do not match: a character is wrong";
}

/** Whether `code` is an ISO 4217 currency code this runtime knows, uppercase. */
export function isCurrencyCode(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && Intl.supportedValuesOf("currency").includes(code);
}

/** Text a provider file can carry in one cell: no control characters (line breaks included). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
const hasControlCharacters = (text: string) => /[\u0000-\u001f\u007f]/.test(text);

/**
 * The details normalised, or the problems of each field (keys as the REST body names them:
 * `email`, `account_holder_name`, `iban`, `currency`). Never both.
 */
export function checkPayoutDetails(
  details: PayoutDetails,
): { details: PayoutDetails; problems?: undefined } | { problems: PayoutDetailsProblems } {
  const problems: PayoutDetailsProblems = {};
  const refuse = (field: string, message: string) => {
    problems[field] = [...(problems[field] ?? []), message];
  };
  const emailOf = (email: string | undefined) => {
    if (email === undefined) return undefined;
    const normalized = normalizeEmail(email);
    if (!isValidEmail(normalized)) refuse("email", "Must be an email address");
    return normalized;
  };
  if (details.type === "paypal") {
    const email = emailOf(details.email);
    return Object.keys(problems).length > 0 ? { problems } : { details: { type: "paypal", email: email ?? "" } };
  }
  const accountHolderName = details.accountHolderName.trim().replace(/\s+/g, " ");
  if (accountHolderName === "") refuse("account_holder_name", "Required: the name on the recipient's account");
  else if (characterCount(accountHolderName) > maxAccountHolderNameLength) {
    refuse("account_holder_name", `At most ${maxAccountHolderNameLength} characters`);
  } else if (hasControlCharacters(accountHolderName)) {
    refuse("account_holder_name", "Must not contain control characters");
  } else if (/^[=+\-@]/.test(accountHolderName)) {
    // A spreadsheet opening the export would read such a cell as a formula.
    refuse("account_holder_name", "Must not start with =, +, - or @");
  }
  const email = details.email === undefined || details.email.trim() === "" ? undefined : emailOf(details.email);
  const iban = details.iban === undefined || details.iban.trim() === "" ? undefined : normalizeIban(details.iban);
  if (iban !== undefined) {
    const problem = ibanProblem(iban);
    if (problem) refuse("iban", problem);
  }
  if (iban === undefined && email === undefined) {
    refuse("iban", "Give an IBAN, or an email for Wise to ask the recipient for bank details");
  }
  const currency = details.currency === undefined || details.currency === "" ? undefined : details.currency;
  if (currency !== undefined && !isCurrencyCode(currency)) {
    refuse("currency", "Must be an ISO 4217 currency code in capitals, e.g. EUR");
  }
  if (Object.keys(problems).length > 0) return { problems };
  return { details: { type: "wise", accountHolderName, email, iban, currency, receiverType: details.receiverType } };
}

/**
 * An email as anyone but the export may see it: the first character of the local part, `***`,
 * the domain (`jane@example.com` -> `j***@example.com`).
 */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at <= 0) return "***";
  const first = String.fromCodePoint(email.codePointAt(0) ?? 42);
  return `${first}***${email.slice(at)}`;
}

/** `DE89370400440532013000` -> `DE89**************3000`: the country and the last four. */
export const maskIban = (iban: string): string =>
  `${iban.slice(0, 4)}${"*".repeat(Math.max(0, iban.length - 8))}${iban.slice(-4)}`;

/** `Ada Lovelace` -> `A*** L***`: each word's first character. */
export const maskName = (name: string): string =>
  name
    .split(" ")
    .map((word) => `${String.fromCodePoint(word.codePointAt(0) ?? 42)}***`)
    .join(" ");

/** The details as every read but the export shows them. */
export function maskPayoutDetails(details: PayoutDetails): PayoutDetails {
  if (details.type === "paypal") return { type: "paypal", email: maskEmail(details.email) };
  return {
    ...details,
    accountHolderName: maskName(details.accountHolderName),
    email: details.email === undefined ? undefined : maskEmail(details.email),
    iban: details.iban === undefined ? undefined : maskIban(details.iban),
  };
}
