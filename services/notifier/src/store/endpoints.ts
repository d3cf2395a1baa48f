import type { Queryable } from "@affiliate/platform";
import type { DisabledReason, Endpoint } from "../domain/types.js";

/*
 * Lock order: an endpoint's row before any of its deliveries' rows.
 *
 * Deleting an endpoint locks its row, then (the foreign key's cascade) every delivery of it; the
 * delivery worker's finish locks the delivery it holds (packages/platform, job-worker.ts), then
 * writes the endpoint's failing mark. Met head-on in that order, each would wait on the other
 * ("deadlock detected", and DELETE /api/v1/webhooks/:id answering 500 while the endpoint's test
 * delivery is attempted). So every transaction that holds an endpoint's row and rows of its deliveries
 * takes the endpoint's row first, in the weakest mode that serves it:
 *
 * - delete: FOR UPDATE (the DELETE itself), then the cascade;
 * - the worker's finish, when it writes the endpoint (a failed attempt: the failing mark, maybe
 *   the disable that fails its pending deliveries; a success while it is failing: the end of
 *   the streak): FOR NO KEY UPDATE in `lockFirst`, before the job's row. A plain success writes
 *   its delivery alone, but twice (its record, then the lease's release), and Postgres checks the
 *   foreign key on the second, taking FOR KEY SHARE on the endpoint after the delivery: so it
 *   takes FOR KEY SHARE in `lockFirst`, and finishes of one endpoint stay concurrent;
 * - recover, the probe's re-enable (requeue failed deliveries) and an erasure (rewrites stored
 *   payloads of a product's endpoints, locked in id order): FOR NO KEY UPDATE, so they take turns
 *   with the worker's disable, which rewrites deliveries of the endpoint too;
 * - recording deliveries (an event, a test): FOR KEY SHARE (what the foreign key takes anyway),
 *   taken by the read that finds the endpoints, so a delete waits for the recording or the
 *   recording finds the endpoint gone, never a foreign key violated.
 *
 * A statement on one delivery alone (retry) or on the endpoint alone (update, rotation, the
 * probe's schedule) holds nothing else and cannot close a cycle; the worker's claim locks
 * deliveries alone, for one short statement, and the retention purge skips locked rows.
 * test/endpoint-races.test.ts races these paths against the worker.
 */
export type EndpointLock = "keep" | "change";

const lockClause = (sql: Queryable, lock: EndpointLock) =>
  lock === "change" ? sql`for no key update` : sql`for key share`;

const columns = "id, product_id, url, events, enabled, disabled_reason, failing_since, created_at";

/** An endpoint with what signing needs; only the worker and rotation read secrets. */
export interface SigningEndpoint extends Endpoint {
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
}

export async function insertEndpoint(
  sql: Queryable,
  row: { id: string; productId: string; url: string; events: string[]; secret: string },
): Promise<Endpoint> {
  const [endpoint] = await sql<Endpoint[]>`
    insert into endpoints (id, product_id, url, events, secret)
    values (${row.id}, ${row.productId}, ${row.url}, ${row.events}, ${row.secret})
    returning ${sql.unsafe(columns)}`;
  return endpoint as Endpoint;
}

export async function findEndpoint(sql: Queryable, productId: string, id: string): Promise<Endpoint | undefined> {
  const [endpoint] = await sql<Endpoint[]>`
    select ${sql.unsafe(columns)} from endpoints where product_id = ${productId} and id = ${id}`;
  return endpoint;
}

export async function findSigningEndpoint(sql: Queryable, id: string): Promise<SigningEndpoint | undefined> {
  const [endpoint] = await sql<SigningEndpoint[]>`
    select ${sql.unsafe(columns)}, secret, previous_secret, previous_secret_until from endpoints where id = ${id}`;
  return endpoint;
}

/**
 * Locks one endpoint (see the lock order above): `keep`, so it is not deleted meanwhile; `change`,
 * to write it or its deliveries. Undefined when it does not exist (or not in this product).
 */
export async function lockEndpoint(
  sql: Queryable,
  id: string,
  lock: EndpointLock,
  productId?: string,
): Promise<Endpoint | undefined> {
  const [endpoint] = await sql<Endpoint[]>`
    select ${sql.unsafe(columns)} from endpoints
    where id = ${id} ${productId === undefined ? sql`` : sql`and product_id = ${productId}`}
    ${lockClause(sql, lock)}`;
  return endpoint;
}

/** Locks every endpoint of a product to change them or their deliveries, in id order (see the lock order above). */
export async function lockProductEndpoints(sql: Queryable, productId: string): Promise<void> {
  await sql`select id from endpoints where product_id = ${productId} order by id for no key update`;
}

/** The endpoint's failing mark, read without a lock. */
export async function failingSinceOf(sql: Queryable, id: string): Promise<Date | null> {
  const [row] = await sql<{ failingSince: Date | null }[]>`select failing_since from endpoints where id = ${id}`;
  return row?.failingSince ?? null;
}

export function listEndpoints(sql: Queryable, productId: string): Promise<Endpoint[]> {
  return sql<Endpoint[]>`
    select ${sql.unsafe(columns)} from endpoints where product_id = ${productId} order by id desc limit 1000`;
}

/**
 * The product's endpoints subscribed to `type` (an empty list means every type), enabled or not.
 * `keep` (in the transaction that records their deliveries) locks them in id order, so none is
 * deleted before the deliveries are inserted (see the lock order above).
 */
export function subscribedEndpoints(
  sql: Queryable,
  productId: string,
  type: string,
  lock?: "keep",
): Promise<Endpoint[]> {
  return sql<Endpoint[]>`
    select ${sql.unsafe(columns)} from endpoints
    where product_id = ${productId} and (events = '{}' or ${type} = any(events))
    ${lock ? sql`order by id ${lockClause(sql, lock)}` : sql``}`;
}

/** Each endpoint's product and event types (empty: every type), of one product or of all. */
export function endpointSubscriptions(
  sql: Queryable,
  productId?: string,
): Promise<{ productId: string; events: string[] }[]> {
  return sql<{ productId: string; events: string[] }[]>`
    select product_id, events from endpoints ${productId === undefined ? sql`` : sql`where product_id = ${productId}`}`;
}

export async function updateEndpoint(
  sql: Queryable,
  productId: string,
  id: string,
  change: { url?: string; events?: string[]; enabled?: boolean },
): Promise<Endpoint | undefined> {
  const [endpoint] = await sql<Endpoint[]>`
    update endpoints set
      url = coalesce(${change.url ?? null}, url),
      events = coalesce(${change.events ?? null}::text[], events),
      enabled = coalesce(${change.enabled ?? null}, enabled),
      disabled_reason = case when coalesce(${change.enabled ?? null}, enabled) then null
                             when ${change.enabled ?? null} = false then 'merchant' else disabled_reason end,
      disabled_at = case when coalesce(${change.enabled ?? null}, enabled) then null
                         when ${change.enabled ?? null} = false then now() else disabled_at end,
      failing_since = case when ${change.enabled ?? null} then null else failing_since end,
      next_probe_at = case when coalesce(${change.enabled ?? null}, enabled) or ${change.enabled ?? null} = false
                           then null else next_probe_at end
    where product_id = ${productId} and id = ${id}
    returning ${sql.unsafe(columns)}`;
  return endpoint;
}

export async function deleteEndpoint(sql: Queryable, productId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from endpoints where product_id = ${productId} and id = ${id} returning id`;
  return rows.length > 0;
}

/** The new secret signs from now on; the current one goes on signing until `overlapUntil`. */
export async function rotateSecret(
  sql: Queryable,
  productId: string,
  id: string,
  secret: string,
  overlapUntil: Date,
): Promise<boolean> {
  const rows = await sql`
    update endpoints set previous_secret = secret, previous_secret_until = ${overlapUntil}, secret = ${secret}
    where product_id = ${productId} and id = ${id} returning id`;
  return rows.length > 0;
}

/** A 2xx: the endpoint answers, so its failing streak ends. */
export async function markAnswering(sql: Queryable, id: string): Promise<void> {
  await sql`update endpoints set failing_since = null where id = ${id} and failing_since is not null`;
}

/**
 * A failed attempt starts the failing streak if none is running; answers when it started and
 * whether the endpoint is enabled, as of now (the caller holds its row).
 */
export async function markFailing(
  sql: Queryable,
  id: string,
  at: Date,
): Promise<{ failingSince: Date; enabled: boolean } | undefined> {
  const [row] = await sql<{ failingSince: Date; enabled: boolean }[]>`
    update endpoints set failing_since = coalesce(failing_since, ${at}) where id = ${id}
    returning failing_since, enabled`;
  return row;
}

/**
 * Disables an endpoint (`failing` or `gone`) and fails its pending deliveries without a further
 * attempt: `recover`, or the probe for a failing one, sends them later.
 */
export async function disableEndpoint(
  sql: Queryable,
  id: string,
  reason: Exclude<DisabledReason, "merchant">,
  at: Date,
  nextProbeAt: Date | null,
): Promise<void> {
  await sql`
    update endpoints set enabled = false, disabled_reason = ${reason}, disabled_at = ${at}, next_probe_at = ${nextProbeAt}
    where id = ${id}`;
  await sql`
    update deliveries set status = 'failed', next_attempt_at = null
    where endpoint_id = ${id} and status = 'pending' and (leased_until is null or leased_until <= ${at})`;
}

/**
 * Claims one `failing` endpoint whose probe is due: in the same statement its next probe moves to
 * `until` (rows locked by another claim are skipped), so no other run or replica probes it
 * meanwhile, and a probe cut short by a crash is made again then.
 */
export async function claimProbe(
  sql: Queryable,
  now: Date,
  until: Date,
): Promise<(SigningEndpoint & { disabledAt: Date }) | undefined> {
  const [endpoint] = await sql<(SigningEndpoint & { disabledAt: Date })[]>`
    update endpoints set next_probe_at = ${until}
    where id in (
      select id from endpoints where next_probe_at <= ${now} and disabled_reason = 'failing'
      order by next_probe_at limit 1 for update skip locked)
    returning ${sql.unsafe(columns)}, secret, previous_secret, previous_secret_until, disabled_at`;
  return endpoint;
}

export async function scheduleProbe(sql: Queryable, id: string, at: Date): Promise<void> {
  await sql`update endpoints set next_probe_at = ${at} where id = ${id} and disabled_reason = 'failing'`;
}

/** The probe got a 2xx: the endpoint is enabled again; answers since when it had been failing. */
export async function reenableEndpoint(sql: Queryable, id: string): Promise<Date | null> {
  const [row] = await sql<{ since: Date | null }[]>`
    update endpoints e set enabled = true, disabled_reason = null, disabled_at = null, next_probe_at = null,
      failing_since = null
    from (select id, coalesce(failing_since, disabled_at) as since from endpoints where id = ${id} for update) old
    where e.id = old.id and e.disabled_reason = 'failing'
    returning old.since`;
  return row ? row.since : null;
}
