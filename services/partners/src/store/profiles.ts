import type { ErasureSubject, Queryable } from "@affiliate/platform";

/**
 * Clears `country_last_ip` of the profile with this email when its affiliate has a partnership
 * in the product (contract 9a: a profile only in other products is left alone). Answers how many
 * profiles matched, whether or not their IP was already null (spec 4.11 counts them all).
 */
export async function clearProfileIp(sql: Queryable, customer: ErasureSubject): Promise<number> {
  const rows = await sql`
    update affiliates a set country_last_ip = null
    where a.email = ${customer.email}
      and exists (select 1 from partnerships p where p.affiliate_id = a.id and p.product_id = ${customer.productId})
    returning a.id`;
  return rows.length;
}

/** How many of the product's profiles with this email still hold an IP. */
export async function countProfilesWithIp(sql: Queryable, customer: ErasureSubject): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from affiliates a
    where a.email = ${customer.email} and a.country_last_ip is not null
      and exists (select 1 from partnerships p where p.affiliate_id = a.id and p.product_id = ${customer.productId})`;
  return row?.count ?? 0;
}
