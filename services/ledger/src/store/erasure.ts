import {
  type ErasureSubject,
  erasedMarker,
  emailInJson as inJson,
  literalPattern,
  type Queryable,
} from "@affiliate/platform";

/** The live and the sandbox events: an erasure treats both alike. */
export type EventsTable = "tracking_events" | "sandbox_events";

/**
 * Anonymises up to `limit` of the customer's events (spec 4.11's table): the email, the
 * provider's customer id, the IP and user agent nulled, the visitor id replaced by a random
 * `anon_` token, `anonymized_at` set, and the email in their audit metadata replaced. Rows are
 * locked in id order; nothing else is locked, so a concurrent refund (payment row, then its
 * commissions) never waits in a cycle with it. Returns the ids it changed.
 */
export async function anonymizeCustomerEvents(
  sql: Queryable,
  table: EventsTable,
  customer: ErasureSubject,
  limit: number,
): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    with batch as (
      select id from ${sql(table)}
      where product_id = ${customer.productId} and customer_email = ${customer.email}
      order by id limit ${limit}
      for update)
    update ${sql(table)} e set
      customer_email = null, provider_customer_id = null, ip = null, user_agent = null,
      visitor_id = 'anon_' || replace(gen_random_uuid()::text, '-', ''),
      anonymized_at = now(),
      metadata = case when metadata = '{}' then metadata
                      else regexp_replace(metadata::text, ${literalPattern(inJson(customer.email))}, ${erasedMarker}, 'gi')::jsonb end
    from batch where e.id = batch.id
    returning e.id`;
  return rows.map((row) => row.id);
}

/** The commissions of these (just anonymised) payments: their customer_email now reads null. */
export async function countCommissionsOfEvents(sql: Queryable, eventIds: string[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from commissions where event_id = any(${eventIds}::text[])`;
  return row?.count ?? 0;
}

/**
 * Replaces the email in up to `limit` of the product's events whose audit metadata quotes it
 * without the event being the customer's own (those were anonymised whole). Returns how many.
 */
export async function scrubEventMetadata(
  sql: Queryable,
  table: EventsTable,
  customer: ErasureSubject,
  limit: number,
): Promise<number> {
  const rows = await sql`
    with batch as (
      select id from ${sql(table)}
      where product_id = ${customer.productId} and metadata <> '{}'
        and strpos(lower(metadata::text), ${inJson(customer.email)}) > 0
      order by id limit ${limit}
      for update)
    update ${sql(table)} e set
      metadata = regexp_replace(metadata::text, ${literalPattern(inJson(customer.email))}, ${erasedMarker}, 'gi')::jsonb
    from batch where e.id = batch.id
    returning e.id`;
  return rows.length;
}

/** Free text columns that may quote a customer's email: the refund's and the commission's reason. */
export type ReasonTable = "refunds" | "commissions";

/** Replaces the email in up to `limit` of the product's reasons that quote it. Returns how many. */
export async function scrubReasons(
  sql: Queryable,
  table: ReasonTable,
  customer: ErasureSubject,
  limit: number,
): Promise<number> {
  const rows = await sql`
    with batch as (
      select id from ${sql(table)}
      where product_id = ${customer.productId} and reason is not null
        and strpos(lower(reason), ${customer.email}) > 0
      order by id limit ${limit}
      for update)
    update ${sql(table)} t set reason = regexp_replace(reason, ${literalPattern(customer.email)}, ${erasedMarker}, 'gi')
    from batch where t.id = batch.id
    returning t.id`;
  return rows.length;
}

/**
 * Replaces the email in the product's stored idempotency outcomes that quote it (today's
 * outcomes hold ids and figures only; this keeps it so if one ever quotes a body). Returns how
 * many.
 */
export async function scrubIdempotencyOutcomes(sql: Queryable, customer: ErasureSubject): Promise<number> {
  const rows = await sql`
    update idempotency_keys set
      outcome = regexp_replace(outcome::text, ${literalPattern(inJson(customer.email))}, ${erasedMarker}, 'gi')::jsonb
    where product_id = ${customer.productId} and outcome is not null
      and strpos(lower(outcome::text), ${inJson(customer.email)}) > 0
    returning key`;
  return rows.length;
}

/** How many records of each ledger store still hold the customer's email. */
export async function findCustomerRecords(sql: Queryable, customer: ErasureSubject): Promise<Record<string, number>> {
  const { productId, email } = customer;
  const json = inJson(email);
  const eventsHolding = (table: EventsTable) => sql`
    select count(*)::int from ${sql(table)}
    where product_id = ${productId}
      and (customer_email = ${email} or (metadata <> '{}' and strpos(lower(metadata::text), ${json}) > 0))`;
  const [row] = await sql<
    { trackingEvents: number; sandboxEvents: number; commissions: number; refunds: number; idempotencyKeys: number }[]
  >`
    select
      (${eventsHolding("tracking_events")}) as tracking_events,
      (${eventsHolding("sandbox_events")}) as sandbox_events,
      (select count(*)::int from (
        -- Two index reads (the customer's payments' commissions, the reasons of the product's
        -- commissions), not a read of every commission of the product.
        select c.id from commissions c
        where c.event_id in (select id from tracking_events where product_id = ${productId} and customer_email = ${email})
        union
        select c.id from commissions c
        where c.product_id = ${productId} and c.reason is not null and strpos(lower(c.reason), ${email}) > 0
      ) holding) as commissions,
      (select count(*)::int from refunds
        where product_id = ${productId} and reason is not null and strpos(lower(reason), ${email}) > 0) as refunds,
      (select count(*)::int from idempotency_keys
        where product_id = ${productId} and outcome is not null and strpos(lower(outcome::text), ${json}) > 0)
        as idempotency_keys`;
  return {
    tracking_events: row?.trackingEvents ?? 0,
    sandbox_events: row?.sandboxEvents ?? 0,
    commissions: row?.commissions ?? 0,
    refunds: row?.refunds ?? 0,
    idempotency_keys: row?.idempotencyKeys ?? 0,
  };
}
