import type { Queryable } from "@affiliate/platform";
import { latestClicks, latestSignups, type Referral } from "../store/tracking-events.js";
import type { PartnersDirectory } from "./ports.js";
import type { Attribution, AttributionMethod, ReferralSource, TrackingEventType } from "./types.js";

const dayMs = 24 * 3600 * 1000;

/**
 * How far after an event a visitor's click may be stamped and still precede it. A click is stamped
 * by our gateway to the millisecond, while the event's time may come from another clock, and a
 * provider's time is a whole second rounded down: Stripe's checkout session `created` at 12:00:04
 * may follow a click stamped 12:00:04.300. Within this margin the click counts as before it.
 */
export const clickClockToleranceMs = 1000;

/** The latest moment a click may be stamped and still count as before an event at `occurredAt`. */
const clicksUntil = (occurredAt: Date) => new Date(occurredAt.getTime() + clickClockToleranceMs);

/** What attribution reads of an event: its customer fields already normalised. */
export interface AttributionQuery {
  productId: string;
  type: TrackingEventType;
  referralCode?: string | undefined;
  referralSource?: ReferralSource | undefined;
  visitorId?: string | undefined;
  customerEmail?: string | undefined;
  providerCustomerId?: string | undefined;
  occurredAt: Date;
}

/** The partnership an event is credited to, and how it was found. */
export interface Credit {
  attribution: Attribution;
  method: AttributionMethod;
}

/**
 * A view of partners for one batch: each referral code and partnership is asked for once, however
 * many events name it, and the answers of a batch agree with each other.
 */
export class BatchDirectory {
  private readonly answers = new Map<string, Promise<Attribution | undefined>>();

  constructor(private readonly partners: PartnersDirectory) {}

  byReferralCode(productId: string, referralCode: string): Promise<Attribution | undefined> {
    return this.once(`${productId}|code:${referralCode.toLowerCase()}`, () =>
      this.partners.byReferralCode(productId, referralCode),
    );
  }

  byPartnershipId(productId: string, partnershipId: string): Promise<Attribution | undefined> {
    return this.once(`${productId}|id:${partnershipId}`, () => this.partners.byPartnershipId(productId, partnershipId));
  }

  private once(key: string, ask: () => Promise<Attribution | undefined>): Promise<Attribution | undefined> {
    let answer = this.answers.get(key);
    if (!answer) {
      answer = ask();
      this.answers.set(key, answer);
    }
    return answer;
  }
}

/** An event of the batch that later events may be credited through. */
interface EarlierEvent extends AttributionQuery {
  partnershipId: string;
  method: AttributionMethod;
}

const later = (a: Referral | undefined, b: Referral | undefined) =>
  !a ? b : !b ? a : b.occurredAt.getTime() >= a.occurredAt.getTime() ? b : a;

/**
 * Who referred each event (contract section 5), first match wins:
 * 1. the referral code it carries (a code no partnership has is no match: the event is still
 *    recorded and the next rules apply);
 * 2. the customer's latest attributed signup, by provider_customer_id or email, not after it;
 * 3. the visitor's latest click (stamped at most `clickClockToleranceMs` after it), if inside the
 *    program's attribution window.
 * Clicks use only the first rule.
 *
 * The events are attributed in order, each as if the ones before it had been recorded already: a
 * signup or click earlier in the list counts like a stored one (a backfill's payment is credited
 * through the signup reported just before it), a later one does not. The stored signups and
 * clicks of all events are read with one statement each, and partners is asked once per code or
 * partnership, all before the walk through the events.
 */
export async function attributeInOrder(
  sql: Queryable,
  partners: BatchDirectory,
  testMode: boolean,
  events: AttributionQuery[],
): Promise<(Attribution | undefined)[]> {
  return (await creditInOrder(sql, partners, testMode, events)).map((credit) => credit?.attribution);
}

/** attributeInOrder, saying how each event was credited too (contract section 17). */
export async function creditInOrder(
  sql: Queryable,
  partners: BatchDirectory,
  testMode: boolean,
  events: AttributionQuery[],
): Promise<(Credit | undefined)[]> {
  const signupQueries = events.flatMap((e, position) =>
    e.type !== "click" && (e.providerCustomerId !== undefined || e.customerEmail !== undefined)
      ? [
          {
            position,
            productId: e.productId,
            providerCustomerId: e.providerCustomerId ?? null,
            customerEmail: e.customerEmail ?? null,
            before: e.occurredAt,
          },
        ]
      : [],
  );
  const clickQueries = events.flatMap((e, position) =>
    e.type !== "click" && e.visitorId !== undefined
      ? [{ position, productId: e.productId, visitorId: e.visitorId, before: clicksUntil(e.occurredAt) }]
      : [],
  );
  const [signups, clicks] = await Promise.all([
    latestSignups(sql, testMode, signupQueries),
    latestClicks(sql, testMode, clickQueries),
  ]);
  const storedSignup = new Map(signupQueries.map((q, i) => [q.position, signups[i]]));
  const storedClick = new Map(clickQueries.map((q, i) => [q.position, clicks[i]]));

  // Every partners answer the walk can need, asked for together.
  await Promise.all([
    ...events.map((e) =>
      e.referralCode === undefined ? undefined : partners.byReferralCode(e.productId, e.referralCode),
    ),
    ...[...storedSignup, ...storedClick].map(([position, referral]) =>
      referral ? partners.byPartnershipId(events[position]?.productId ?? "", referral.partnershipId) : undefined,
    ),
  ]);

  const earlier: EarlierEvent[] = [];
  const credits: (Credit | undefined)[] = [];
  for (const [position, event] of events.entries()) {
    const credit = await creditOne(event, {
      partners,
      signup: later(storedSignup.get(position), latestEarlierSignup(earlier, event)),
      click: later(storedClick.get(position), latestEarlierClick(earlier, event)),
    });
    credits.push(credit);
    // Only active partnerships take clicks (any other click is refused and not recorded).
    const recorded = event.type !== "click" || credit?.attribution.status === "active";
    if (credit && recorded) {
      earlier.push({ ...event, partnershipId: credit.attribution.partnershipId, method: credit.method });
    }
  }
  return credits;
}

async function creditOne(
  event: AttributionQuery,
  found: { partners: BatchDirectory; signup: Referral | undefined; click: Referral | undefined },
): Promise<Credit | undefined> {
  const { productId } = event;
  if (event.referralCode !== undefined) {
    const byCode = await found.partners.byReferralCode(productId, event.referralCode);
    if (byCode) return { attribution: byCode, method: event.referralSource ?? "link" };
    if (event.type === "click") return undefined;
  }
  if (found.signup) {
    const bySignup = await found.partners.byPartnershipId(productId, found.signup.partnershipId);
    if (bySignup) return { attribution: bySignup, method: found.signup.attribution ?? "signup" };
  }
  if (found.click) {
    const byClick = await found.partners.byPartnershipId(productId, found.click.partnershipId);
    const windowStart = event.occurredAt.getTime() - (byClick?.program.attributionWindowDays ?? 0) * dayMs;
    if (byClick && found.click.occurredAt.getTime() >= windowStart) return { attribution: byClick, method: "visitor" };
  }
  return undefined;
}

function latestEarlier(candidates: EarlierEvent[]): Referral | undefined {
  let latest: Referral | undefined;
  for (const { partnershipId, occurredAt, method } of candidates) {
    latest = later(latest, { partnershipId, occurredAt, attribution: method });
  }
  return latest;
}

function latestEarlierSignup(earlier: EarlierEvent[], event: AttributionQuery): Referral | undefined {
  if (event.type === "click") return undefined;
  return latestEarlier(
    earlier.filter(
      (e) =>
        e.type === "signup" &&
        e.productId === event.productId &&
        e.occurredAt <= event.occurredAt &&
        ((event.providerCustomerId !== undefined && e.providerCustomerId === event.providerCustomerId) ||
          (event.customerEmail !== undefined && e.customerEmail === event.customerEmail)),
    ),
  );
}

function latestEarlierClick(earlier: EarlierEvent[], event: AttributionQuery): Referral | undefined {
  if (event.type === "click" || event.visitorId === undefined) return undefined;
  return latestEarlier(
    earlier.filter(
      (e) =>
        e.type === "click" &&
        e.productId === event.productId &&
        e.visitorId === event.visitorId &&
        e.occurredAt <= clicksUntil(event.occurredAt),
    ),
  );
}
