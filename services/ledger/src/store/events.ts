import type { Queryable } from "@affiliate/platform";
import type { CommissionSummary, EventType } from "../domain/types.js";

/** Live events and sandbox events have the same shape and live in separate tables. */
export const eventsTable = (testMode: boolean) => (testMode ? "sandbox_events" : "tracking_events");

export interface EventRow {
  id: string;
  productId: string;
  eventType: EventType;
  partnershipId: string | null;
  visitorId: string | null;
  customerEmail: string | null;
  providerCustomerId: string | null;
  amountCents: number | null;
  externalId: string | null;
  ip: string | null;
  userAgent: string | null;
  occurredAt: Date;
}

export interface StoredEvent extends EventRow {
  simulatedCommissions?: CommissionSummary[];
}

/**
 * Inserts the event unless a payment with its external_id exists; then returns undefined and the
 * caller reads the original. Concurrent inserts of one external_id wait for each other on the
 * unique index, so exactly one wins.
 */
export async function insertEventUnlessReplay(
  sql: Queryable,
  testMode: boolean,
  event: EventRow & { simulatedCommissions?: CommissionSummary[] },
): Promise<boolean> {
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
    occurred_at: event.occurredAt,
  };
  if (testMode) columns.simulated_commissions = sql.json((event.simulatedCommissions ?? []) as never);
  const rows = await sql`
    insert into ${sql(eventsTable(testMode))} ${sql(columns)}
    on conflict (product_id, external_id) where external_id is not null do nothing
    returning id`;
  return rows.length === 1;
}

export async function findPaymentByExternalId(
  sql: Queryable,
  testMode: boolean,
  productId: string,
  externalId: string,
): Promise<StoredEvent | undefined> {
  const [row] = await sql<StoredEvent[]>`
    select id, product_id, event_type, partnership_id, visitor_id, customer_email, provider_customer_id,
           amount_cents, external_id, ip, user_agent, occurred_at
           ${testMode ? sql`, simulated_commissions` : sql``}
    from ${sql(eventsTable(testMode))}
    where product_id = ${productId} and external_id = ${externalId}`;
  return row;
}

/** The partnership of the customer's latest attributed signup not after `before`. */
export async function findSignupPartnership(
  sql: Queryable,
  testMode: boolean,
  query: {
    productId: string;
    providerCustomerId?: string | undefined;
    customerEmail?: string | undefined;
    before: Date;
  },
): Promise<string | undefined> {
  const table = sql(eventsTable(testMode));
  const byId = query.providerCustomerId
    ? sql`(select partnership_id, occurred_at from ${table}
           where product_id = ${query.productId} and event_type = 'signup'
             and provider_customer_id = ${query.providerCustomerId} and occurred_at <= ${query.before}
             and partnership_id is not null
           order by occurred_at desc limit 1)`
    : undefined;
  const byEmail = query.customerEmail
    ? sql`(select partnership_id, occurred_at from ${table}
           where product_id = ${query.productId} and event_type = 'signup'
             and customer_email = ${query.customerEmail} and occurred_at <= ${query.before}
             and partnership_id is not null
           order by occurred_at desc limit 1)`
    : undefined;
  const latest = byId && byEmail ? sql`${byId} union all ${byEmail}` : (byId ?? byEmail);
  if (!latest) return undefined;
  const [row] = await sql<{ partnershipId: string }[]>`
    select partnership_id from (${latest}) latest order by occurred_at desc limit 1`;
  return row?.partnershipId;
}

/** The visitor's latest click not after `before`, with its partnership and time. */
export async function findClickPartnership(
  sql: Queryable,
  testMode: boolean,
  query: { productId: string; visitorId: string; before: Date },
): Promise<{ partnershipId: string; occurredAt: Date } | undefined> {
  const [row] = await sql<{ partnershipId: string; occurredAt: Date }[]>`
    select partnership_id, occurred_at from ${sql(eventsTable(testMode))}
    where product_id = ${query.productId} and event_type = 'click' and visitor_id = ${query.visitorId}
      and occurred_at <= ${query.before} and partnership_id is not null
    order by occurred_at desc limit 1`;
  return row;
}
