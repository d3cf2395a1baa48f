import type { Queryable } from "@affiliate/platform";

/** Stores a token's hash; the partnership's tokens that have expired go at the same time. */
export async function insertToken(
  sql: Queryable,
  token: { hash: Buffer; productId: string; partnershipId: string; expiresAt: Date },
): Promise<void> {
  await sql`delete from affiliate_tokens where partnership_id = ${token.partnershipId} and expires_at <= now()`;
  await sql`
    insert into affiliate_tokens (token_hash, product_id, partnership_id, expires_at)
    values (${token.hash}, ${token.productId}, ${token.partnershipId}, ${token.expiresAt})`;
}

/** Deletes every token of the partnership; answers how many were still alive. */
export async function deleteTokens(sql: Queryable, partnershipId: string): Promise<number> {
  const rows = await sql<{ alive: boolean }[]>`
    delete from affiliate_tokens where partnership_id = ${partnershipId} returning expires_at > now() as alive`;
  return rows.filter((row) => row.alive).length;
}

/** The partnership a live token reads: unexpired, and its partnership active. */
export async function findLiveToken(
  sql: Queryable,
  hash: Buffer,
): Promise<{ productId: string; partnershipId: string; expiresAt: Date } | undefined> {
  const [row] = await sql<{ productId: string; partnershipId: string; expiresAt: Date }[]>`
    select t.product_id, t.partnership_id, t.expires_at
    from affiliate_tokens t join partnerships p on p.id = t.partnership_id
    where t.token_hash = ${hash} and t.expires_at > now() and p.status = 'active'`;
  return row;
}

/** The active partnership of the email in the product, if there is one. */
export async function findActivePartnershipByEmail(
  sql: Queryable,
  productId: string,
  email: string,
): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }[]>`
    select p.id from partnerships p join affiliates a on a.id = p.affiliate_id
    where p.product_id = ${productId} and a.email = ${email} and p.status = 'active'`;
  return row;
}

/** Whether the partnership asked to sign in within `withinMs` and has not used that login yet. */
export async function hasRecentLogin(sql: Queryable, partnershipId: string, withinMs: number): Promise<boolean> {
  const rows = await sql`
    select 1 from affiliate_logins
    where partnership_id = ${partnershipId} and used_at is null
      and created_at > now() - make_interval(secs => ${withinMs / 1000})
    limit 1`;
  return rows.length > 0;
}

/** Records a sign-in (without a code yet); the partnership's expired logins go at the same time. */
export async function insertLogin(
  sql: Queryable,
  login: { id: string; productId: string; partnershipId: string; expiresAt: Date },
): Promise<void> {
  await sql`delete from affiliate_logins where partnership_id = ${login.partnershipId} and expires_at <= now()`;
  await sql`
    insert into affiliate_logins (id, product_id, partnership_id, expires_at)
    values (${login.id}, ${login.productId}, ${login.partnershipId}, ${login.expiresAt})`;
}

/**
 * Gives an unused, unexpired login a new code hash (the previous code, if any, stops working).
 * Answers the login's partnership and expiry, or why not: unknown in this product, or spent.
 */
export async function replaceLoginCode(
  sql: Queryable,
  productId: string,
  loginId: string,
  codeHash: Buffer,
): Promise<{ partnershipId: string; expiresAt: Date } | "not_found" | "spent"> {
  const [updated] = await sql<{ partnershipId: string; expiresAt: Date }[]>`
    update affiliate_logins set code_hash = ${codeHash}
    where product_id = ${productId} and id = ${loginId} and used_at is null and expires_at > now()
    returning partnership_id, expires_at`;
  if (updated) return updated;
  const [exists] = await sql`select 1 from affiliate_logins where product_id = ${productId} and id = ${loginId}`;
  return exists ? "spent" : "not_found";
}

/**
 * Marks the login of a code used, once: of two concurrent exchanges of one code, one updates the
 * row and the other finds it used. Answers the login's product and partnership when the code was
 * live (unused, unexpired) and its partnership is active.
 */
export async function useLoginCode(
  sql: Queryable,
  codeHash: Buffer,
): Promise<{ productId: string; partnershipId: string } | undefined> {
  const [row] = await sql<{ productId: string; partnershipId: string; active: boolean }[]>`
    update affiliate_logins l set used_at = now()
    from partnerships p
    where l.code_hash = ${codeHash} and l.used_at is null and l.expires_at > now() and p.id = l.partnership_id
    returning l.product_id, l.partnership_id, p.status = 'active' as active`;
  return row?.active ? { productId: row.productId, partnershipId: row.partnershipId } : undefined;
}
