import type { Queryable } from "@affiliate/platform";

/** Remembers that the ledger must release a payout id's commissions. */
export async function addPendingRelease(sql: Queryable, release: { payoutId: string; productId: string }) {
  await sql`
    insert into pending_releases (payout_id, product_id) values (${release.payoutId}, ${release.productId})
    on conflict do nothing`;
}

export async function pendingReleases(sql: Queryable, limit: number) {
  return sql<{ payoutId: string; productId: string }[]>`
    select payout_id, product_id from pending_releases order by created_at limit ${limit}`;
}

export async function removePendingRelease(sql: Queryable, payoutId: string) {
  await sql`delete from pending_releases where payout_id = ${payoutId}`;
}
