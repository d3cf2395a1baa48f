import type { Queryable } from "@affiliate/platform";

/** Stores a session's hash; the product's sessions that have expired go at the same time. */
export async function insertConsoleSession(
  sql: Queryable,
  session: { hash: Buffer; productId: string; expiresAt: Date },
): Promise<void> {
  await sql`delete from console_sessions where product_id = ${session.productId} and expires_at <= now()`;
  await sql`
    insert into console_sessions (token_hash, product_id, expires_at)
    values (${session.hash}, ${session.productId}, ${session.expiresAt})`;
}

/** The product of a live (unexpired) session. */
export async function findLiveConsoleSession(
  sql: Queryable,
  hash: Buffer,
): Promise<{ productId: string; expiresAt: Date } | undefined> {
  const [row] = await sql<{ productId: string; expiresAt: Date }[]>`
    select product_id, expires_at from console_sessions where token_hash = ${hash} and expires_at > now()`;
  return row;
}

export async function deleteConsoleSession(sql: Queryable, hash: Buffer): Promise<void> {
  await sql`delete from console_sessions where token_hash = ${hash}`;
}

/** Every session of the product: its keys were rotated. */
export async function deleteProductConsoleSessions(sql: Queryable, productId: string): Promise<void> {
  await sql`delete from console_sessions where product_id = ${productId}`;
}
