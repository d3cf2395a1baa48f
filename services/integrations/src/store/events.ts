import { type JobRow, type Queryable, wakeAfterCommit } from "@affiliate/platform";
import type { EventOutcome, ReceivedEvent, StoredEvent } from "../domain/types.js";

/** A stored event as the apply worker claims it. */
export interface EventJob extends JobRow {
  productId: string;
  connectionId: string;
  eventId: string;
  type: string;
  livemode: boolean;
  receivedAt: Date;
  outcome: EventOutcome;
  attempts: number;
}

const listColumns = (sql: Queryable) =>
  sql`id, event_id, type, livemode, received_at, outcome, detail, tracking_event_id, commission_ids`;

/**
 * Stores a verified event, due at once, unless its id is stored already (a redelivery): answers
 * whether it was new. The insert is the acknowledgement's precondition: Stripe is answered 200
 * only after it commits.
 */
export async function insertEvent(
  sql: Queryable,
  event: ReceivedEvent & { id: string; productId: string; connectionId: string; now: Date },
): Promise<boolean> {
  const inserted = await sql`
    insert into stripe_events (id, product_id, connection_id, event_id, type, livemode, created_at, received_at,
                               payload, outcome, detail, apply_group, next_attempt_at)
    values (${event.id}, ${event.productId}, ${event.connectionId}, ${event.eventId}, ${event.type}, ${event.livemode},
            ${event.createdAt}, ${event.now}, ${event.payload}::text::jsonb, 'waiting', 'Received; not applied yet',
            ${event.applyGroup}, ${event.now})
    on conflict (product_id, event_id) do nothing`;
  if (inserted.count > 0) wakeAfterCommit("stripe_events");
  return inserted.count > 0;
}

/**
 * The event as stored, parsed here: read as text, because the pool's camelCase transform would
 * rename the payload's own keys (amount_paid) if postgres.js parsed the jsonb.
 */
export async function payloadOf(sql: Queryable, id: string): Promise<unknown> {
  const [row] = await sql<{ payload: string }[]>`select payload::text as payload from stripe_events where id = ${id}`;
  if (!row) throw new Error(`stripe event ${id} is gone`);
  return JSON.parse(row.payload);
}

/** Which of these Stripe event ids the product has stored. */
export async function storedEventIds(sql: Queryable, productId: string, eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await sql<{ eventId: string }[]>`
    select event_id from stripe_events where product_id = ${productId} and event_id = any(${eventIds}::text[])`;
  return new Set(rows.map((row) => row.eventId));
}

/** The outcome of an attempt, written when the attempt finishes (fenced by the job's lease). */
export interface AttemptRecord {
  outcome: EventOutcome;
  detail: string;
  trackingEventId?: string | null | undefined;
  commissionIds?: string[] | undefined;
  /** When to try again (waiting for a payment, a service unavailable); null: done. */
  nextAttemptAt: Date | null;
  /** The payments a waiting refund or dispute waits for. */
  awaitsPayment?: string[] | undefined;
  /** The customer a waiting payment waits for (its customer.* or session event). */
  awaitsCustomer?: string | undefined;
}

export async function recordAttempt(sql: Queryable, id: string, record: AttemptRecord): Promise<void> {
  await sql`
    update stripe_events
    set outcome = ${record.outcome}, detail = ${record.detail},
        tracking_event_id = coalesce(${record.trackingEventId ?? null}, tracking_event_id),
        commission_ids = ${record.commissionIds ?? []}::text[],
        next_attempt_at = ${record.nextAttemptAt}, awaits_payment = ${record.awaitsPayment ?? null},
        awaits_customer = ${record.awaitsCustomer ?? null},
        attempts = attempts + 1
    where id = ${id}`;
}

/**
 * Serialises, per payment id, a payment's recording (which wakes its waiters) with an event's
 * recording that it waits for that payment: whichever commits second sees the other. Taken in
 * id order, after the caller's own event row.
 */
export async function lockPaymentIds(sql: Queryable, productId: string, paymentIds: string[]): Promise<void> {
  for (const id of [...new Set(paymentIds)].sort()) {
    await sql`select pg_advisory_xact_lock(hashtext(${`stripe-payment:${productId}:${id}`}))`;
  }
}

/**
 * A payment was recorded (the caller holds lockPaymentIds): the refunds and disputes waiting for
 * it are due at once, in the order received. A waiter whose own recording is in flight (its row locked) is skipped: it
 * finds the payment itself once this commits (see `waitingRecorded`), and nothing waits for the
 * other's lock.
 */
export async function wakeWaitersOf(sql: Queryable, productId: string, paymentIds: string[], now: Date): Promise<void> {
  // Due again at their receipt, not at the wake: a group's events are claimed in next_attempt_at
  // order, and an event of the same group received after a woken one (a dispute's closing after
  // its opening) and not tried yet is due at its own receipt; the woken one goes first.
  await sql`
    update stripe_events set next_attempt_at = least(received_at, ${now})
    where id = any(array(
      select id from stripe_events
      where product_id = ${productId} and outcome = 'waiting' and awaits_payment && ${paymentIds}::text[]
      for update skip locked))`;
  wakeAfterCommit("stripe_events");
}

export async function eventOf(sql: Queryable, productId: string, eventId: string): Promise<StoredEvent | undefined> {
  const [row] = await sql<StoredEvent[]>`
    select ${listColumns(sql)} from stripe_events where product_id = ${productId} and event_id = ${eventId}`;
  return row;
}

/** Makes a failed event due again; answers its attempts so far, or undefined when it had not failed. */
export async function scheduleRetry(
  sql: Queryable,
  productId: string,
  eventId: string,
  now: Date,
): Promise<number | undefined> {
  const [row] = await sql<{ attempts: number }[]>`
    update stripe_events set outcome = 'waiting', detail = 'Retry requested; not applied yet', next_attempt_at = ${now}
    where product_id = ${productId} and event_id = ${eventId} and outcome = 'failed'
    returning attempts`;
  if (row) wakeAfterCommit("stripe_events");
  return row?.attempts;
}

/** How many attempts the event has had. */
export async function attemptsOf(sql: Queryable, productId: string, eventId: string): Promise<number> {
  const [row] = await sql<{ attempts: number }[]>`
    select attempts from stripe_events where product_id = ${productId} and event_id = ${eventId}`;
  return row?.attempts ?? 0;
}

/** One page of the product's events, newest first, after the internal id `afterId`. */
export async function listEvents(
  sql: Queryable,
  productId: string,
  filter: { outcome?: EventOutcome | undefined },
  afterId: string | undefined,
  limit: number,
): Promise<StoredEvent[]> {
  return sql<StoredEvent[]>`
    select ${listColumns(sql)} from stripe_events
    where product_id = ${productId}
      ${filter.outcome ? sql`and outcome = ${filter.outcome}` : sql``}
      ${afterId ? sql`and id < ${afterId}` : sql``}
    order by id desc limit ${limit}`;
}

/** The outcomes of these internal ids, and whether each was tried yet (reconciliation waits for them). */
export async function outcomesOf(
  sql: Queryable,
  ids: string[],
): Promise<{ id: string; outcome: EventOutcome; attempted: boolean }[]> {
  if (ids.length === 0) return [];
  return sql<{ id: string; outcome: EventOutcome; attempted: boolean }[]>`
    select id, outcome, attempts > 0 as attempted from stripe_events where id = any(${ids}::text[])`;
}

/** The last event the product received, for reconciliation's default start. */
export async function lastReceivedAt(sql: Queryable, productId: string): Promise<Date | null> {
  const [row] = await sql<{ at: Date | null }[]>`
    select max(received_at) as at from stripe_events where product_id = ${productId}`;
  return row?.at ?? null;
}

/** The payments waiting for this customer's own event, oldest received first: their ids. */
export async function paymentsAwaitingCustomer(
  sql: Queryable,
  productId: string,
  customerId: string,
): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from stripe_events
    where product_id = ${productId} and outcome = 'waiting' and awaits_customer = ${customerId}
    order by received_at, id`;
  return rows.map((row) => row.id);
}

/**
 * The customer's own event was applied: the payments waiting for it are due at once, at their
 * receipt (so they keep their order within the customer's group).
 */
export async function wakeCustomerWaiters(
  sql: Queryable,
  productId: string,
  customerId: string,
  now: Date,
): Promise<void> {
  await sql`
    update stripe_events set next_attempt_at = least(received_at, ${now}), awaits_customer = null
    where product_id = ${productId} and outcome = 'waiting' and awaits_customer = ${customerId}`;
}
