import type { ErasureSubject, Queryable } from "@affiliate/platform";

/** A stored payout method: which provider, and its details still sealed. */
export interface PayoutMethodRow {
  partnershipId: string;
  method: "paypal" | "wise";
  sealedDetails: Uint8Array;
  updatedAt: Date;
}

/** Sets the partnership's method, replacing any previous one. */
export async function upsertPayoutMethod(
  sql: Queryable,
  row: { productId: string; partnershipId: string; method: "paypal" | "wise"; sealedDetails: Buffer; now: Date },
): Promise<PayoutMethodRow> {
  const [stored] = await sql<PayoutMethodRow[]>`
    insert into payout_methods (partnership_id, product_id, method, sealed_details, updated_at)
    values (${row.partnershipId}, ${row.productId}, ${row.method}, ${row.sealedDetails}, ${row.now})
    on conflict (partnership_id) do update
      set method = excluded.method, sealed_details = excluded.sealed_details, updated_at = excluded.updated_at
    returning partnership_id, method, sealed_details, updated_at`;
  if (!stored) throw new Error("upsert returned no row");
  return stored;
}

export async function findPayoutMethod(
  sql: Queryable,
  productId: string,
  partnershipId: string,
): Promise<PayoutMethodRow | undefined> {
  const [row] = await sql<PayoutMethodRow[]>`
    select partnership_id, method, sealed_details, updated_at from payout_methods
    where product_id = ${productId} and partnership_id = ${partnershipId}`;
  return row;
}

export async function findPayoutMethods(
  sql: Queryable,
  productId: string,
  partnershipIds: readonly string[],
): Promise<PayoutMethodRow[]> {
  if (partnershipIds.length === 0) return [];
  return sql<PayoutMethodRow[]>`
    select partnership_id, method, sealed_details, updated_at from payout_methods
    where product_id = ${productId} and partnership_id = any(${partnershipIds as string[]}::text[])`;
}

/** Answers whether there was one. */
export async function deletePayoutMethod(sql: Queryable, productId: string, partnershipId: string): Promise<boolean> {
  const rows = await sql`
    delete from payout_methods where product_id = ${productId} and partnership_id = ${partnershipId}
    returning partnership_id`;
  return rows.length > 0;
}

/**
 * Erasure (contract 9a, 19): deletes the payout methods of the product's partnerships whose
 * affiliate has this email, answering how many.
 */
export async function deletePayoutMethodsOfEmail(sql: Queryable, subject: ErasureSubject): Promise<number> {
  const rows = await sql`
    delete from payout_methods m
    using partnerships p, affiliates a
    where m.partnership_id = p.id and p.affiliate_id = a.id
      and m.product_id = ${subject.productId} and a.email = ${subject.email}
    returning m.partnership_id`;
  return rows.length;
}

/** How many of the product's payout methods still belong to an affiliate with this email. */
export async function countPayoutMethodsOfEmail(sql: Queryable, subject: ErasureSubject): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from payout_methods m
    join partnerships p on p.id = m.partnership_id join affiliates a on a.id = p.affiliate_id
    where m.product_id = ${subject.productId} and a.email = ${subject.email}`;
  return row?.count ?? 0;
}
