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

/** Remembers that a customer's own event (customer.*, a checkout session) has been applied. */
export async function markCustomerSeen(sql: Queryable, productId: string, customerId: string): Promise<void> {
  await sql`
    insert into stripe_customers_seen (product_id, customer_id) values (${productId}, ${customerId})
    on conflict (product_id, customer_id) do nothing`;
}

/** Whether a customer's own event has been applied. */
export async function customerSeen(sql: Queryable, productId: string, customerId: string): Promise<boolean> {
  const [row] = await sql<{ one: number }[]>`
    select 1 as one from stripe_customers_seen where product_id = ${productId} and customer_id = ${customerId}`;
  return row !== undefined;
}

/** The partnership a promotion code (an id or a code, any case) is mapped to, first match of `codes`. */
export async function partnershipOfPromotionCodes(
  sql: Queryable,
  productId: string,
  codes: string[],
): Promise<{ partnershipId: string; referralCode: string; code: string } | undefined> {
  if (codes.length === 0) return undefined;
  const lowered = codes.map((code) => code.toLowerCase());
  const rows = await sql<{ code: string; partnershipId: string; referralCode: string }[]>`
    select code, partnership_id, referral_code from stripe_promotion_codes
    where product_id = ${productId} and code = any(${lowered}::text[])`;
  for (const code of lowered) {
    const row = rows.find((r) => r.code === code);
    if (row) return row;
  }
  return undefined;
}

/**
 * Maps exactly `codes` to the partnership (replacing its earlier mapping). A code another
 * partnership of the product holds is refused: answers those codes, and changes nothing then.
 */
export async function replacePromotionCodes(
  sql: Queryable,
  mapping: { productId: string; partnershipId: string; referralCode: string; codes: string[] },
): Promise<{ takenBy: { code: string; partnershipId: string }[] }> {
  const lowered = [...new Set(mapping.codes.map((code) => code.toLowerCase()))];
  const taken = await sql<{ code: string; partnershipId: string }[]>`
    select code, partnership_id from stripe_promotion_codes
    where product_id = ${mapping.productId} and code = any(${lowered}::text[])
      and partnership_id <> ${mapping.partnershipId}
    for update`;
  if (taken.length > 0) return { takenBy: taken };
  await sql`
    delete from stripe_promotion_codes
    where product_id = ${mapping.productId} and partnership_id = ${mapping.partnershipId}`;
  if (lowered.length > 0) {
    await sql`
      insert into stripe_promotion_codes (product_id, code, partnership_id, referral_code)
      select ${mapping.productId}, code, ${mapping.partnershipId}, ${mapping.referralCode}
      from unnest(${lowered}::text[]) as code`;
  }
  return { takenBy: [] };
}

/** The promotion codes mapped to a partnership, in code order. */
export async function promotionCodesOf(sql: Queryable, productId: string, partnershipId: string): Promise<string[]> {
  const rows = await sql<{ code: string }[]>`
    select code from stripe_promotion_codes
    where product_id = ${productId} and partnership_id = ${partnershipId} order by code`;
  return rows.map((row) => row.code);
}
