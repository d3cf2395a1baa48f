/**
 * The attribution script's decisions, as pure functions over plain values (no DOM, no network),
 * so they are tested without a browser; src/affiliate.ts does the reading and writing.
 */

// The contract's own rule (3-50 letters, digits, hyphens, underscores), bundled into the script.
import { referralCodePattern } from "@affiliate/contract-rules";

/** What the script keeps for the attribution window: the referral, the visitor and when it ends. */
export interface StoredReferral {
  code: string;
  visitor_id: string;
  /** When the referral expires (ms since the epoch). */
  expires: number;
  /** When its click was recorded (ms since the epoch): the same click within 30 minutes is not sent again. */
  clicked_at: number;
}

/** The cookie and the localStorage entry's name. */
export const storageName = "aff_ref";
/** The same referral from one visitor within this long is one click (contract section 17). */
export const repeatClickMs = 30 * 60 * 1000;
/** What a visitor id from a referral link (aff_vid) may be. */
const visitorIdPattern = /^[A-Za-z0-9_-]{1,128}$/;

/** A stored referral read back (a cookie's or localStorage's text), or undefined when unusable or expired. */
export function parseStored(text: string | null | undefined, now: number): StoredReferral | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<StoredReferral>;
    if (
      typeof value.code !== "string" ||
      !referralCodePattern.test(value.code) ||
      typeof value.visitor_id !== "string" ||
      !visitorIdPattern.test(value.visitor_id) ||
      typeof value.expires !== "number" ||
      value.expires <= now
    ) {
      return undefined;
    }
    return {
      code: value.code,
      visitor_id: value.visitor_id,
      expires: value.expires,
      clicked_at: typeof value.clicked_at === "number" ? value.clicked_at : 0,
    };
  } catch {
    return undefined;
  }
}

/** What a landing page's URL says: the referral code (first of `params` present) and a link's visitor id. */
export function referralInUrl(
  search: string,
  params: string[],
): { code: string; visitorId: string | undefined } | undefined {
  const query = new URLSearchParams(search);
  for (const param of params) {
    const code = query.get(param)?.trim();
    if (code && referralCodePattern.test(code)) {
      const visitorId = query.get("aff_vid") ?? undefined;
      return { code, visitorId: visitorId && visitorIdPattern.test(visitorId) ? visitorId : undefined };
    }
  }
  return undefined;
}

/**
 * What to do on load: nothing new (keep what is stored), record a click, or keep a referral
 * whose click a referral link (/r/CODE, which added aff_vid) recorded already. The same code
 * clicked again by the same visitor within 30 minutes is no new click.
 */
export function decide(
  found: { code: string; visitorId: string | undefined } | undefined,
  stored: StoredReferral | undefined,
  now: number,
): { kind: "keep" } | { kind: "click"; visitorId: string | undefined } | { kind: "adopt"; visitorId: string } {
  if (!found) return { kind: "keep" };
  if (found.visitorId) {
    return stored?.visitor_id === found.visitorId ? { kind: "keep" } : { kind: "adopt", visitorId: found.visitorId };
  }
  const sameCode = stored !== undefined && stored.code.toLowerCase() === found.code.toLowerCase();
  if (sameCode && now - stored.clicked_at < repeatClickMs) return { kind: "keep" };
  return { kind: "click", visitorId: stored?.visitor_id };
}

/** A Stripe Payment Link's URL with the visitor as client_reference_id (kept when already set). */
export function withClientReference(href: string, visitorId: string): string | undefined {
  try {
    const url = new URL(href);
    if (url.hostname !== "buy.stripe.com") return undefined;
    if (url.searchParams.get("client_reference_id")) return undefined;
    url.searchParams.set("client_reference_id", visitorId);
    return url.toString();
  } catch {
    return undefined;
  }
}
