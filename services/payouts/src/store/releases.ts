import type { Queryable } from "@affiliate/platform";

/** Remembers that the ledger must release these payout ids' commissions. */
export async function addPendingReleases(sql: Queryable, releases: { id: string; productId: string }[]) {
  if (releases.length === 0) return;
  await sql`
    insert into pending_releases (payout_id, product_id)
    select * from unnest(${releases.map((r) => r.id)}::text[], ${releases.map((r) => r.productId)}::text[])
    on conflict do nothing`;
}

/** The oldest releases still owed, as `{ id, productId }` like the drafts they came from. */
export async function pendingReleases(sql: Queryable, limit: number) {
  return sql<{ id: string; productId: string }[]>`
    select payout_id as id, product_id from pending_releases order by created_at limit ${limit}`;
}

export async function removePendingReleases(sql: Queryable, payoutIds: string[]) {
  if (payoutIds.length === 0) return;
  await sql`delete from pending_releases where payout_id = any(${payoutIds}::text[])`;
}
