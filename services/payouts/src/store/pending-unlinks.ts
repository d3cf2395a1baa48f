import type { Queryable } from "@affiliate/platform";

/**
 * Remembers that the ledger must unlink these payout ids' commissions (ReleaseCommissions), in
 * the table pending_releases.
 */
export async function addPendingUnlinks(sql: Queryable, payouts: { id: string; productId: string }[]) {
  if (payouts.length === 0) return;
  await sql`
    insert into pending_releases (payout_id, product_id)
    select * from unnest(${payouts.map((p) => p.id)}::text[], ${payouts.map((p) => p.productId)}::text[])
    on conflict do nothing`;
}

/** The oldest unlinks still owed, as `{ id, productId }` like the drafts they came from. */
export async function pendingUnlinks(sql: Queryable, limit: number) {
  return sql<{ id: string; productId: string }[]>`
    select payout_id as id, product_id from pending_releases order by created_at limit ${limit}`;
}

export async function removePendingUnlinks(sql: Queryable, payoutIds: string[]) {
  if (payoutIds.length === 0) return;
  await sql`delete from pending_releases where payout_id = any(${payoutIds}::text[])`;
}
