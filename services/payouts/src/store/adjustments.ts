import type { Queryable } from "@affiliate/platform";

/** Sum of each partnership's unapplied adjustments (0 or negative), for generation. */
export async function unappliedAdjustmentTotals(sql: Queryable, productId: string): Promise<Map<string, number>> {
  const rows = await sql<{ partnershipId: string; totalCents: number }[]>`
    select partnership_id, sum(amount_cents)::int8 as total_cents from adjustments
    where product_id = ${productId} and payout_id is null
    group by partnership_id`;
  return new Map(rows.map((row) => [row.partnershipId, row.totalCents]));
}

/**
 * Attaches the partnership's unapplied adjustments to a payout. The condition on `payout_id is
 * null` is re-checked after a concurrent claim commits, so an adjustment lands in one payout.
 */
export async function claimUnappliedAdjustments(
  sql: Queryable,
  payout: { id: string; productId: string; partnershipId: string },
): Promise<void> {
  await sql`
    update adjustments set payout_id = ${payout.id}
    where product_id = ${payout.productId} and partnership_id = ${payout.partnershipId} and payout_id is null`;
}

/** Makes a payout's adjustments unapplied again (payout rejected or abandoned). */
export async function unapplyAdjustments(sql: Queryable, payoutId: string): Promise<void> {
  await sql`update adjustments set payout_id = null where payout_id = ${payoutId}`;
}

/** Records a clawback; false when the event already created one. */
export async function insertAdjustment(
  sql: Queryable,
  adjustment: {
    id: string;
    productId: string;
    partnershipId: string;
    commissionId: string;
    amountCents: number;
    payoutId: string | null;
    sourceEventId: string;
  },
): Promise<boolean> {
  const rows = await sql`
    insert into adjustments (id, product_id, partnership_id, commission_id, amount_cents, payout_id, source_event_id)
    values (${adjustment.id}, ${adjustment.productId}, ${adjustment.partnershipId}, ${adjustment.commissionId},
            ${adjustment.amountCents}, ${adjustment.payoutId}, ${adjustment.sourceEventId})
    on conflict (source_event_id) do nothing
    returning id`;
  return rows.length > 0;
}
