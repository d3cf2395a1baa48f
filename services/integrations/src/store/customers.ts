import type { Queryable } from "@affiliate/platform";

/** The signup recorded for a customer's referral, if any. */
export async function signupOfCustomer(
  sql: Queryable,
  productId: string,
  customerId: string,
): Promise<string | undefined> {
  const [row] = await sql<{ signupEventId: string }[]>`
    select signup_event_id from stripe_customers where product_id = ${productId} and customer_id = ${customerId}`;
  return row?.signupEventId;
}

export async function recordCustomerSignup(
  sql: Queryable,
  row: { productId: string; customerId: string; signupEventId: string },
): Promise<void> {
  await sql`
    insert into stripe_customers (product_id, customer_id, signup_event_id)
    values (${row.productId}, ${row.customerId}, ${row.signupEventId})
    on conflict (product_id, customer_id) do nothing`;
}

/** Whether a payment named by any of `ids` (its external id or an alias) was recorded from a Stripe event. */
export async function anyPaymentRecorded(sql: Queryable, productId: string, ids: string[]): Promise<boolean> {
  if (ids.length === 0) return false;
  const [row] = await sql<{ id: string }[]>`
    select payment_intent_id as id from stripe_payments
    where product_id = ${productId} and payment_intent_id = any(${ids}::text[]) limit 1`;
  return row !== undefined;
}

/**
 * Remembers the ids a payment recorded as `externalId` is named by: the other ids (payment
 * intents) of its refunds and disputes, and its own (so a waiter can tell it was recorded).
 */
export async function recordPaymentAliases(
  sql: Queryable,
  productId: string,
  externalId: string,
  aliases: string[],
): Promise<void> {
  if (aliases.length === 0) return;
  await sql`
    insert into stripe_payments (product_id, payment_intent_id, external_id)
    select ${productId}, alias, ${externalId} from unnest(${aliases}::text[]) as alias
    on conflict (product_id, payment_intent_id) do nothing`;
}

/** The external ids `ids` name: each id itself, preceded by the payment it is an alias of. */
export async function resolvePaymentIds(sql: Queryable, productId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await sql<{ paymentIntentId: string; externalId: string }[]>`
    select payment_intent_id, external_id from stripe_payments
    where product_id = ${productId} and payment_intent_id = any(${ids}::text[])`;
  const aliasOf = new Map(rows.map((row) => [row.paymentIntentId, row.externalId]));
  const resolved = ids.flatMap((id) => [aliasOf.get(id), id]).filter((id): id is string => id !== undefined);
  return [...new Set(resolved)];
}
