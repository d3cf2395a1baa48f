import type { Queryable } from "@affiliate/platform";
import type {
  AttributionMethod,
  CommissionSkipped,
  CommissionSummary,
  FraudFlag,
  TrackingEventType,
} from "../domain/types.js";

/** Live events and sandbox events have the same shape and live in separate tables. */
export const eventsTable = (testMode: boolean) => (testMode ? "sandbox_events" : "tracking_events");

export interface EventRow {
  id: string;
  productId: string;
  eventType: TrackingEventType;
  partnershipId: string | null;
  visitorId: string | null;
  customerEmail: string | null;
  providerCustomerId: string | null;
  amountCents: number | null;
  externalId: string | null;
  ip: string | null;
  userAgent: string | null;
  /** A click's keyed address hash and referring host (contract section 17); null otherwise. */
  ipHash: string | null;
  referrerHost: string | null;
  /** How the event found its partnership; null when unattributed. */
  attribution: AttributionMethod | null;
  occurredAt: Date;
}

export interface StoredEvent extends EventRow {
  /** A live click's fraud flags: set, it is counted nowhere (contract section 18). */
  flags?: FraudFlag[] | null;
  simulatedCommissions?: CommissionSummary[];
  /** Why an attributed payment earned nothing (live: set after the insert; sandbox: with it). */
  commissionSkipped?: CommissionSkipped | null;
}

/** A stored event's columns, as EventRow names them. */
const eventColumns = (sql: Queryable) => sql`
  id, product_id, event_type, partnership_id, visitor_id, customer_email, provider_customer_id, amount_cents,
  external_id, ip, user_agent, ip_hash, referrer_host, attribution, occurred_at, commission_skipped`;

/**
 * Inserts the events with one statement, except payments whose external_id is already recorded
 * for their product; returns the ids of the rows inserted (the caller reads the originals of the
 * others). Concurrent inserts of one external_id wait for each other on the unique index, so
 * exactly one wins. Rows go in by (product, external_id): two writers that share several
 * external_ids take those index entries in the same order and cannot deadlock.
 */
export async function insertEventsUnlessReplay(
  sql: Queryable,
  testMode: boolean,
  events: StoredEvent[],
): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const byExternalId = (e: EventRow) => (e.externalId === null ? "\uffff" : `${e.productId}\u0000${e.externalId}`);
  const rows = [...events]
    .sort((a, b) => (byExternalId(a) < byExternalId(b) ? -1 : byExternalId(a) > byExternalId(b) ? 1 : 0))
    .map((event) => {
      const columns: Record<string, unknown> = {
        id: event.id,
        product_id: event.productId,
        event_type: event.eventType,
        partnership_id: event.partnershipId,
        visitor_id: event.visitorId,
        customer_email: event.customerEmail,
        provider_customer_id: event.providerCustomerId,
        amount_cents: event.amountCents,
        external_id: event.externalId,
        ip: event.ip,
        user_agent: event.userAgent,
        ip_hash: event.ipHash,
        referrer_host: event.referrerHost,
        attribution: event.attribution,
        occurred_at: event.occurredAt,
      };
      if (!testMode) {
        columns.flags = event.flags && event.flags.length > 0 ? sql.json(event.flags as never) : null;
      }
      if (testMode) {
        columns.simulated_commissions = sql.json((event.simulatedCommissions ?? []) as never);
        columns.commission_skipped = event.commissionSkipped ?? null;
      }
      return columns;
    });
  const inserted = await sql<{ id: string }[]>`
    insert into ${sql(eventsTable(testMode))} ${sql(rows)}
    on conflict (product_id, external_id) where external_id is not null do nothing
    returning id`;
  return new Set(inserted.map((row) => row.id));
}

/**
 * Records why these live payments (just inserted, in the caller's transaction) earned nothing:
 * answered again when the payment is replayed. One statement, none when nothing was skipped.
 */
export async function setCommissionSkipped(
  sql: Queryable,
  skipped: { eventId: string; reason: CommissionSkipped }[],
): Promise<void> {
  if (skipped.length === 0) return;
  await sql`
    update tracking_events e set commission_skipped = s.reason
    from unnest(${skipped.map((s) => s.eventId)}::text[], ${skipped.map((s) => s.reason)}::text[]) as s (id, reason)
    where e.id = s.id`;
}

/** The recorded payments with these (product, external_id) pairs; pairs with none are absent. */
export async function findPaymentsByExternalIds(
  sql: Queryable,
  testMode: boolean,
  keys: { productId: string; externalId: string }[],
): Promise<StoredEvent[]> {
  if (keys.length === 0) return [];
  return sql<StoredEvent[]>`
    select ${eventColumns(sql)} ${testMode ? sql`, simulated_commissions` : sql``}
    from ${sql(eventsTable(testMode))}
    where (product_id, external_id) in (
      select * from unnest(${keys.map((k) => k.productId)}::text[], ${keys.map((k) => k.externalId)}::text[]))`;
}

/** A stored signup or click that may credit a later event: its partnership and when it happened. */
export interface Referral {
  partnershipId: string;
  occurredAt: Date;
  /** A signup's own method (a payment credited through it carries it); null for older signups. */
  attribution?: AttributionMethod | null;
}

/**
 * For each query, the customer's latest attributed signup not after `before` (by
 * provider_customer_id or email, whichever is later), or undefined: one statement for them all.
 */
export async function latestSignups(
  sql: Queryable,
  testMode: boolean,
  queries: { productId: string; providerCustomerId: string | null; customerEmail: string | null; before: Date }[],
): Promise<(Referral | undefined)[]> {
  if (queries.length === 0) return [];
  const table = sql(eventsTable(testMode));
  const rows = await sql<(Referral & { position: number })[]>`
    select q.position, s.partnership_id, s.occurred_at, s.attribution
    from unnest(${queries.map((_, i) => i)}::int[], ${queries.map((q) => q.productId)}::text[],
                ${queries.map((q) => q.providerCustomerId)}::text[], ${queries.map((q) => q.customerEmail)}::text[],
                ${queries.map((q) => q.before.toISOString())}::timestamptz[])
      as q (position, product_id, provider_customer_id, customer_email, before)
    cross join lateral (
      select partnership_id, occurred_at, attribution from (
        (select partnership_id, occurred_at, attribution from ${table}
         where product_id = q.product_id and event_type = 'signup' and provider_customer_id = q.provider_customer_id
           and occurred_at <= q.before and partnership_id is not null
         order by occurred_at desc limit 1)
        union all
        (select partnership_id, occurred_at, attribution from ${table}
         where product_id = q.product_id and event_type = 'signup' and customer_email = q.customer_email
           and occurred_at <= q.before and partnership_id is not null
         order by occurred_at desc limit 1)
      ) latest order by occurred_at desc limit 1
    ) s`;
  const found: (Referral | undefined)[] = queries.map(() => undefined);
  for (const { position, ...referral } of rows) found[position] = referral;
  return found;
}

/** For each query, the visitor's latest attributed click not after `before`: one statement. */
export async function latestClicks(
  sql: Queryable,
  testMode: boolean,
  queries: { productId: string; visitorId: string; before: Date }[],
): Promise<(Referral | undefined)[]> {
  if (queries.length === 0) return [];
  const rows = await sql<(Referral & { position: number })[]>`
    select q.position, c.partnership_id, c.occurred_at
    from unnest(${queries.map((_, i) => i)}::int[], ${queries.map((q) => q.productId)}::text[],
                ${queries.map((q) => q.visitorId)}::text[], ${queries.map((q) => q.before.toISOString())}::timestamptz[])
      as q (position, product_id, visitor_id, before)
    cross join lateral (
      select partnership_id, occurred_at from ${sql(eventsTable(testMode))}
      where product_id = q.product_id and event_type = 'click' and visitor_id = q.visitor_id
        and occurred_at <= q.before and partnership_id is not null
      order by occurred_at desc limit 1
    ) c`;
  const found: (Referral | undefined)[] = queries.map(() => undefined);
  for (const { position, ...referral } of rows) found[position] = referral;
  return found;
}
