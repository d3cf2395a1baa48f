/**
 * /js/v1/affiliate.js (contract section 17), pasted into a merchant's pages:
 *
 *   <script async src="https://GATEWAY/js/v1/affiliate.js" data-key="pk_live_…"></script>
 *
 * On a landing page whose URL carries `?ref=CODE` (or `via`, or the `data-param` attribute's name)
 * it records one click with the page's publishable key, keeps `{ code, visitor_id, expires }` in a
 * first-party cookie and localStorage for the program's attribution window, exposes
 * `window.affiliate.visitorId()` / `.referral()`, and puts the visitor id on Stripe Payment Links
 * (`client_reference_id`) and Pricing Tables / Buy Buttons (`client-reference-id`) on the page.
 *
 * It runs in someone else's page: it throws nothing into it, and whatever goes wrong (no key, a
 * blocked cookie or storage, the gateway unreachable) it says once on the console and does
 * nothing more. It talks to nothing but the gateway it was loaded from.
 */
import {
  decide,
  parseStored,
  referralInUrl,
  type StoredReferral,
  storageName,
  withClientReference,
} from "./referral.js";

interface AffiliateApi {
  /** The visitor id of the kept referral, or null. */
  visitorId(): string | null;
  /** The kept referral, or null. */
  referral(): { code: string; visitor_id: string; expires: string } | null;
  /** Settles when the script has done its work for this page view (never rejects). */
  ready: Promise<void>;
}

declare global {
  interface Window {
    affiliate?: AffiliateApi;
  }
}

const dayMs = 24 * 60 * 60 * 1000;
let warned = false;

/** One console warning per page view, whatever went wrong. */
function warn(message: string): void {
  if (warned) return;
  warned = true;
  try {
    console.warn(`[affiliate.js] ${message}`);
  } catch {
    // No console: nothing else to say it with.
  }
}

function readCookie(): string | undefined {
  try {
    const prefix = `${storageName}=`;
    const entry = document.cookie.split("; ").find((part) => part.startsWith(prefix));
    return entry ? decodeURIComponent(entry.slice(prefix.length)) : undefined;
  } catch {
    return undefined;
  }
}

function readLocal(): string | null {
  try {
    return window.localStorage.getItem(storageName);
  } catch {
    return null;
  }
}

/** Keeps the referral in both places; answers whether either took it. */
function keep(referral: StoredReferral): boolean {
  const text = JSON.stringify(referral);
  let kept = false;
  try {
    const maxAge = Math.max(0, Math.floor((referral.expires - Date.now()) / 1000));
    const secure = location.protocol === "https:" ? "; Secure" : "";
    // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is not in every browser merchants' visitors use (Firefox), and the value is built and escaped here once.
    document.cookie = `${storageName}=${encodeURIComponent(text)}; Max-Age=${maxAge}; Path=/; SameSite=Lax${secure}`;
    kept = readCookie() === text;
  } catch {
    // Cookies blocked: localStorage may still take it.
  }
  try {
    window.localStorage.setItem(storageName, text);
    kept = true;
  } catch {
    // Storage blocked too, or full.
  }
  return kept;
}

/** Puts the visitor id on Stripe's Payment Links, Pricing Tables and Buy Buttons under `root`. */
function decorate(root: ParentNode, visitorId: string): void {
  for (const link of Array.from(root.querySelectorAll<HTMLAnchorElement>('a[href*="buy.stripe.com"]'))) {
    const href = withClientReference(link.href, visitorId);
    if (href) link.href = href;
  }
  for (const element of Array.from(root.querySelectorAll("stripe-pricing-table, stripe-buy-button"))) {
    if (!element.getAttribute("client-reference-id")) element.setAttribute("client-reference-id", visitorId);
  }
}

/** Decorates what is on the page now and whatever is added later (single-page apps, late widgets). */
function decorateAlways(visitorId: string): void {
  const run = () => decorate(document, visitorId);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run, { once: true });
  else run();
  if (typeof MutationObserver === "function") {
    new MutationObserver(run).observe(document.documentElement, { childList: true, subtree: true });
  }
}

async function call<T>(base: string, key: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(base + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    keepalive: true,
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return (await response.json()) as T;
}

async function run(script: HTMLScriptElement | null, state: { referral: StoredReferral | undefined }) {
  const now = Date.now();
  state.referral = parseStored(readCookie(), now) ?? parseStored(readLocal(), now);
  const params = [script?.getAttribute("data-param") || "ref", "ref", "via"];
  const found = referralInUrl(location.search, params);
  const action = decide(found, state.referral, now);
  if (action.kind !== "keep" && found) {
    const key = script?.getAttribute("data-key");
    if (!script || !key) throw new Error("no data-key attribute with a publishable key (pk_live_…)");
    const base = new URL(script.src).origin;
    const settings = call<{ data: { attribution_window_days: number } }>(base, key, "/program/public");
    let visitorId: string;
    if (action.kind === "click") {
      const click = await call<{ data: { visitor_id: string } }>(base, key, "/events/click", {
        referral_code: found.code,
        ...(action.visitorId ? { visitor_id: action.visitorId } : {}),
        ...(document.referrer ? { referrer: document.referrer.slice(0, 2048) } : {}),
      });
      visitorId = click.data.visitor_id;
    } else {
      visitorId = action.visitorId;
    }
    const windowDays = (await settings).data.attribution_window_days;
    state.referral = { code: found.code, visitor_id: visitorId, expires: now + windowDays * dayMs, clicked_at: now };
    if (!keep(state.referral)) warn("cookies and localStorage are blocked: the referral lasts this page view only");
  }
  if (state.referral) decorateAlways(state.referral.visitor_id);
}

(() => {
  try {
    if (window.affiliate) return;
    const script = document.currentScript as HTMLScriptElement | null;
    const state: { referral: StoredReferral | undefined } = { referral: undefined };
    const ready = run(script, state).catch((error: unknown) => {
      warn(`not recording this visit: ${error instanceof Error ? error.message : String(error)}`);
    });
    window.affiliate = {
      visitorId: () => state.referral?.visitor_id ?? null,
      referral: () =>
        state.referral
          ? {
              code: state.referral.code,
              visitor_id: state.referral.visitor_id,
              expires: new Date(state.referral.expires).toISOString(),
            }
          : null,
      ready,
    };
  } catch (error) {
    warn(`disabled: ${error instanceof Error ? error.message : String(error)}`);
  }
})();
