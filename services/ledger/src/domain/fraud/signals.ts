/**
 * The fraud signals (contract section 18), each a pure function of the event and its context
 * that answers the flag it raises, with its evidence, or undefined. Recording calls them
 * (check-events.ts gathers the context and applies the program's settings); nothing else
 * decides what is suspicious.
 *
 * Evidence says what was seen without copying personal data the record already holds: a
 * self-referral names how the customer matched the affiliate (and the shared domain), not the
 * emails; a bot names the user-agent token, not the user agent. The merchant reads it beside the
 * commission; the affiliate never does (it would teach evasion).
 */
import { refundRateWindowDays } from "@affiliate/contract-rules";
import type { FraudFlag } from "../types.js";

/**
 * Domains anyone can get an address at, so sharing one says nothing about who someone is: the
 * large webmail providers, and the names reserved for examples and tests (RFC 2606, RFC 6761),
 * which identify no organisation either.
 */
const publicEmailDomains = new Set([
  "gmail.com",
  "googlemail.com",
  "outlook.com",
  "hotmail.com",
  "hotmail.co.uk",
  "live.com",
  "msn.com",
  "yahoo.com",
  "yahoo.co.uk",
  "yahoo.fr",
  "ymail.com",
  "icloud.com",
  "me.com",
  "mac.com",
  "aol.com",
  "proton.me",
  "protonmail.com",
  "pm.me",
  "gmx.com",
  "gmx.de",
  "gmx.net",
  "web.de",
  "mail.com",
  "zoho.com",
  "yandex.com",
  "yandex.ru",
  "mail.ru",
  "qq.com",
  "163.com",
  "126.com",
  "fastmail.com",
  "hey.com",
  "tutanota.com",
  "example.com",
  "example.org",
  "example.net",
]);
const reservedSuffixes = [".example", ".test", ".invalid", ".localhost", ".local"];

/** Whether an email domain is shared by strangers (a webmail provider or a reserved name). */
export function isPublicEmailDomain(domain: string): boolean {
  const name = domain.toLowerCase();
  return publicEmailDomains.has(name) || name === "localhost" || reservedSuffixes.some((s) => name.endsWith(s));
}

const domainOf = (email: string) => email.slice(email.lastIndexOf("@") + 1).toLowerCase();

/**
 * self_referral: the paying customer is the affiliate. The same email (both normalised); or the
 * same domain when it is not a public one (a colleague's address at the affiliate's own
 * company); or the paying visitor id is one the affiliate's own portal sign-in used.
 */
export function selfReferral(
  payment: { customerEmail: string | null; visitorId: string | null },
  affiliate: { email: string | null; portalVisitorIds?: readonly string[] },
): FraudFlag | undefined {
  const { customerEmail, visitorId } = payment;
  if (customerEmail && affiliate.email) {
    if (customerEmail === affiliate.email) return { signal: "self_referral", evidence: { match: "email" } };
    const domain = domainOf(customerEmail);
    if (domain === domainOf(affiliate.email) && !isPublicEmailDomain(domain)) {
      return { signal: "self_referral", evidence: { match: "email_domain", domain } };
    }
  }
  if (visitorId && affiliate.portalVisitorIds?.includes(visitorId)) {
    return { signal: "self_referral", evidence: { match: "portal_visitor", visitor_id: visitorId } };
  }
  return undefined;
}

/** How close two clicks of one visitor (or address) on one code must be to be one. */
export const duplicateClickWindowMs = 60 * 60 * 1000;

/** A counted click a new click is compared with. */
export interface EarlierClick {
  id: string;
  visitorId: string | null;
  ipHash: string | null;
  occurredAt: Date;
}

/**
 * duplicate_click: the same visitor, or the same address hash, had a counted click on the same
 * code less than an hour before this one (at or before it, never after). `earlier` are counted
 * clicks of the same partnership; the latest match is the evidence.
 */
export function duplicateClick(
  click: { visitorId: string | null; ipHash: string | null; occurredAt: Date },
  earlier: readonly EarlierClick[],
): FraudFlag | undefined {
  const at = click.occurredAt.getTime();
  let match: { click: EarlierClick; on: "visitor_id" | "ip_hash" } | undefined;
  for (const candidate of earlier) {
    const age = at - candidate.occurredAt.getTime();
    if (age < 0 || age >= duplicateClickWindowMs) continue;
    const on =
      click.visitorId !== null && candidate.visitorId === click.visitorId
        ? "visitor_id"
        : click.ipHash !== null && candidate.ipHash === click.ipHash
          ? "ip_hash"
          : undefined;
    if (on && (!match || candidate.occurredAt > match.click.occurredAt)) match = { click: candidate, on };
  }
  if (!match) return undefined;
  return {
    signal: "duplicate_click",
    evidence: {
      matched_on: match.on,
      counted_click_id: match.click.id,
      counted_click_at: match.click.occurredAt.toISOString(),
      window_minutes: duplicateClickWindowMs / 60_000,
    },
  };
}

/**
 * Tokens of user agents that are not a person's browser: crawlers and link previewers (which
 * name themselves), headless and automated browsers, and HTTP libraries. Matched as words,
 * case-insensitively; the first token found is the evidence.
 */
const botTokens = [
  "bot",
  "crawler",
  "crawl",
  "spider",
  "slurp",
  "headlesschrome",
  "headless",
  "phantomjs",
  "puppeteer",
  "playwright",
  "selenium",
  "webdriver",
  "lighthouse",
  "facebookexternalhit",
  "curl",
  "wget",
  "python-requests",
  "python-urllib",
  "aiohttp",
  "httpx",
  "go-http-client",
  "okhttp",
  "java",
  "libwww-perl",
  "node-fetch",
  "axios",
  "undici",
  "scrapy",
];
const botPattern = new RegExp(
  `(?:^|[^a-z])(${botTokens.map((t) => t.replace(/[-.]/g, "\\$&")).join("|")})(?:[^a-z]|$)|([a-z]+bot)(?:[^a-z]|$)`,
  "i",
);

/** bot: the click's user agent names a crawler, a headless browser or an HTTP library. */
export function bot(userAgent: string | null): FraudFlag | undefined {
  if (!userAgent) return undefined;
  const found = botPattern.exec(userAgent);
  if (!found) return undefined;
  return { signal: "bot", evidence: { user_agent_token: (found[1] ?? found[2] ?? "").toLowerCase() } };
}

/**
 * refund_rate: of the partnership's attributed payments of the last 30 days (level-1
 * commissions, by payment time), the refunded share is above the program's threshold.
 */
export function refundRate(
  history: { paymentsCents: bigint; refundedCents: bigint },
  thresholdBps: number,
): FraudFlag | undefined {
  const { paymentsCents, refundedCents } = history;
  if (paymentsCents <= 0n) return undefined;
  // Compared exactly (sums of cents outgrow a double's integers once multiplied):
  // refunded / payments > threshold / 10000.
  if (refundedCents * 10_000n <= BigInt(thresholdBps) * paymentsCents) return undefined;
  return {
    signal: "refund_rate",
    evidence: {
      window_days: refundRateWindowDays,
      payments_cents: paymentsCents.toString(),
      refunded_cents: refundedCents.toString(),
      refund_rate_bps: Number((refundedCents * 10_000n) / paymentsCents),
      threshold_bps: thresholdBps,
    },
  };
}
