import type { Queryable } from "@affiliate/platform";

/** One customer's attributed payments to one partnership (customer_payment_counters). */
export interface CounterKey {
  productId: string;
  partnershipId: string;
  /** customerKey() of the payment: a hash of provider_customer_id, else the email. */
  customerKey: string;
}

/** What is recorded of a customer's payments to a partnership. */
export interface RecordedPayments {
  payments: number;
  firstPaymentAt: Date;
}

/** A Map key for a CounterKey. */
export const counterKeyOf = (key: CounterKey) => `${key.productId}\u0000${key.partnershipId}\u0000${key.customerKey}`;

/**
 * Adds each key's newly recorded payments to its counter and answers what was recorded before
 * them, in one statement. The rows are upserted, so locked until the caller's transaction ends,
 * in key order: a concurrent recording of the same customer waits here and then counts after
 * these payments, and two writers sharing several keys take them in the same order and cannot
 * deadlock. A new counter is anchored at `firstPaymentAt`, the first of the added payments.
 */
export async function addPayments(
  sql: Queryable,
  additions: (CounterKey & { payments: number; firstPaymentAt: Date; firstEventId: string })[],
): Promise<Map<string, RecordedPayments | undefined>> {
  if (additions.length === 0) return new Map();
  const rows = [...additions].sort((a, b) => (counterKeyOf(a) < counterKeyOf(b) ? -1 : 1));
  const counted = await sql<(CounterKey & { payments: number; firstPaymentAt: Date; added: number })[]>`
    insert into customer_payment_counters as c
      (product_id, partnership_id, customer_key, payments, first_payment_at, first_event_id)
    select * from unnest(
      ${rows.map((r) => r.productId)}::text[], ${rows.map((r) => r.partnershipId)}::text[],
      ${rows.map((r) => r.customerKey)}::text[], ${rows.map((r) => r.payments)}::int[],
      ${rows.map((r) => r.firstPaymentAt.toISOString())}::timestamptz[], ${rows.map((r) => r.firstEventId)}::text[])
    order by 1, 2, 3
    on conflict (product_id, partnership_id, customer_key)
      do update set payments = c.payments + excluded.payments
    returning c.product_id, c.partnership_id, c.customer_key, c.payments, c.first_payment_at`;
  const addedOf = new Map(rows.map((r) => [counterKeyOf(r), r.payments]));
  const before = new Map<string, RecordedPayments | undefined>();
  for (const row of counted) {
    const key = counterKeyOf(row);
    const payments = row.payments - (addedOf.get(key) ?? 0);
    before.set(key, payments > 0 ? { payments, firstPaymentAt: row.firstPaymentAt } : undefined);
  }
  return before;
}

/** What is recorded for these keys, read without locking (sandbox answers and previews). */
export async function recordedPayments(sql: Queryable, keys: CounterKey[]): Promise<Map<string, RecordedPayments>> {
  if (keys.length === 0) return new Map();
  const rows = await sql<(CounterKey & RecordedPayments)[]>`
    select c.product_id, c.partnership_id, c.customer_key, c.payments, c.first_payment_at
    from customer_payment_counters c
    where (c.product_id, c.partnership_id, c.customer_key) in (
      select * from unnest(${keys.map((k) => k.productId)}::text[], ${keys.map((k) => k.partnershipId)}::text[],
                           ${keys.map((k) => k.customerKey)}::text[]))`;
  return new Map(
    rows.map((row) => [counterKeyOf(row), { payments: row.payments, firstPaymentAt: row.firstPaymentAt }]),
  );
}
