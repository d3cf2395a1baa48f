import { emailInJson, erasedMarker, literalPattern, type Queryable, wakeAfterCommit } from "@affiliate/platform";
import type { Attempt, Delivery, WebhookBody } from "../domain/types.js";

// The payload is read as text: the pool's camelCase transform would otherwise rename its keys.
const columns =
  "id, endpoint_id, event_id, event_type, status, attempts, last_status_code, last_error, next_attempt_at, created_at, payload::text as payload";

const parsed = (rows: (Omit<Delivery, "payload"> & { payload: string })[]): Delivery[] =>
  rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) as WebhookBody }));

/** The stored body exactly as it will be sent (and signed). */
export async function payloadText(sql: Queryable, id: string): Promise<string | undefined> {
  const [row] = await sql<{ payload: string }[]>`select payload::text as payload from deliveries where id = ${id}`;
  return row?.payload;
}

/** A delivery as the job worker holds it. */
export interface DeliveryJob extends Delivery {
  productId: string;
  traceHeaders: Record<string, string>;
  nextAttemptAt: Date | null;
  leasedUntil: Date | null;
  leaseToken: string | null;
}

export interface NewDelivery {
  id: string;
  productId: string;
  endpointId: string;
  payload: WebhookBody;
  traceHeaders: Record<string, string>;
  /** Null records it as failed without an attempt (a disabled endpoint). */
  dueAt: Date | null;
}

/**
 * Records deliveries with one statement; a redelivered event finds its rows and adds nothing
 * (unique per endpoint and event).
 */
export async function insertDeliveries(sql: Queryable, rows: NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into deliveries ${sql(
      rows.map((row) => ({
        id: row.id,
        productId: row.productId,
        endpointId: row.endpointId,
        eventId: row.payload.id,
        eventType: row.payload.type,
        payload: sql.json(row.payload as never),
        traceHeaders: sql.json(row.traceHeaders),
        status: row.dueAt ? "pending" : "failed",
        nextAttemptAt: row.dueAt,
      })),
    )}
    on conflict (endpoint_id, event_id) do nothing`;
  wakeAfterCommit("deliveries");
}

export async function findDelivery(
  sql: Queryable,
  productId: string,
  endpointId: string,
  id: string,
): Promise<Delivery | undefined> {
  const rows = await sql<(Omit<Delivery, "payload"> & { payload: string })[]>`
    select ${sql.unsafe(columns)} from deliveries
    where product_id = ${productId} and endpoint_id = ${endpointId} and id = ${id}`;
  return parsed(rows)[0];
}

export async function listDeliveries(
  sql: Queryable,
  endpointId: string,
  afterId: string | undefined,
  limit: number,
): Promise<Delivery[]> {
  return parsed(
    await sql<(Omit<Delivery, "payload"> & { payload: string })[]>`
      select ${sql.unsafe(columns)} from deliveries
      where endpoint_id = ${endpointId} ${afterId ? sql`and id < ${afterId}` : sql``}
      order by id desc limit ${limit}`,
  );
}

export function attemptsOf(sql: Queryable, deliveryId: string): Promise<Attempt[]> {
  return sql<Attempt[]>`
    select attempted_at, status_code, duration_ms, error from delivery_attempts
    where delivery_id = ${deliveryId} order by attempted_at`;
}

export async function recordAttempt(
  sql: Queryable,
  deliveryId: string,
  attempt: Attempt,
  next: { status: "pending" | "succeeded" | "failed"; nextAttemptAt: Date | null },
): Promise<void> {
  await sql`
    insert into delivery_attempts (delivery_id, attempted_at, status_code, duration_ms, error)
    values (${deliveryId}, ${attempt.attemptedAt}, ${attempt.statusCode}, ${attempt.durationMs}, ${attempt.error})`;
  await sql`
    update deliveries set attempts = attempts + 1, last_status_code = ${attempt.statusCode},
      last_error = ${attempt.error || null}, status = ${next.status}, next_attempt_at = ${next.nextAttemptAt}
    where id = ${deliveryId}`;
}

/** Due now, whatever the status: the retry endpoint. */
export async function requeueDelivery(sql: Queryable, id: string, at: Date): Promise<void> {
  await sql`update deliveries set status = 'pending', next_attempt_at = ${at} where id = ${id}`;
  wakeAfterCommit("deliveries");
}

/** Every failed delivery of the endpoint created in [since, until) is due again; answers how many. */
export async function requeueFailed(
  sql: Queryable,
  endpointId: string,
  since: Date,
  until: Date,
  at: Date,
): Promise<number> {
  const rows = await sql`
    update deliveries set status = 'pending', next_attempt_at = ${at}
    where endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${since} and created_at < ${until}
    returning id`;
  if (rows.length > 0) wakeAfterCommit("deliveries");
  return rows.length;
}

/**
 * Deletes deliveries (with their attempts) created before `before`, in batches; answers how many.
 * The batch is deleted by id (`= any(array(…))`, the primary key): as a join, a table without
 * statistics would be hashed whole at every batch. Rows another transaction holds are skipped (the
 * next run deletes them), so the purge never waits and never closes a cycle of locks.
 */
export async function purgeDeliveries(sql: Queryable, before: Date, batchSize = 5000): Promise<number> {
  let purged = 0;
  for (;;) {
    const rows = await sql`
      delete from deliveries where id = any(array(
        select id from deliveries where created_at < ${before} limit ${batchSize} for update skip locked))
      returning id`;
    purged += rows.length;
    if (rows.length < batchSize) return purged;
  }
}

/** Stored payloads of this product whose `data.customer_email` is `email`. */
export async function countCustomerPayloads(sql: Queryable, productId: string, email: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from deliveries
    where product_id = ${productId}
      and (payload -> 'data' ->> 'customer_email' = ${email} or strpos(lower(payload::text), ${emailInJson(email)}) > 0)`;
  return row?.count ?? 0;
}

/**
 * Sets `data.customer_email` to null in this product's stored payloads that carry `email`, and
 * replaces the email wherever else a payload quotes it (a refund's free-text `reason`, in any
 * capitals) with `[erased]`.
 */
export async function eraseCustomerPayloads(sql: Queryable, productId: string, email: string): Promise<number> {
  const rows = await sql`
    update deliveries set payload = regexp_replace(
        (case when payload -> 'data' ->> 'customer_email' = ${email}
              then jsonb_set(payload, '{data,customer_email}', 'null'::jsonb) else payload end)::text,
        ${literalPattern(emailInJson(email))}, ${erasedMarker}, 'gi')::jsonb
    where product_id = ${productId}
      and (payload -> 'data' ->> 'customer_email' = ${email} or strpos(lower(payload::text), ${emailInJson(email)}) > 0)
    returning id`;
  if (rows.length > 0) wakeAfterCommit("deliveries");
  return rows.length;
}
