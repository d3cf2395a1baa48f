import type { Queryable } from "@affiliate/platform";
import type { Draft } from "./payouts.js";

/** Sum of each partnership's unapplied adjustments (0 or negative), for generation: exact bigints. */
export async function unappliedAdjustmentTotals(sql: Queryable, productId: string): Promise<Map<string, bigint>> {
  const rows = await sql<{ partnershipId: string; totalCents: bigint }[]>`
    select partnership_id, sum(amount_cents) as total_cents from adjustments
    where product_id = ${productId} and payout_id is null
    group by partnership_id`;
  return new Map(rows.map((row) => [row.partnershipId, row.totalCents]));
}

/**
 * Attaches each draft's partnership's unapplied adjustments to the draft, in one statement.
 * Rows are locked in id order, so concurrent generations over the same partnerships wait rather
 * than deadlock; a row that waited is checked again, and one another draft took meanwhile
 * (`payout_id` no longer null) is skipped, so an adjustment lands in one payout.
 */
export async function claimUnappliedAdjustments(sql: Queryable, drafts: Draft[]): Promise<void> {
  if (drafts.length === 0) return;
  await sql`
    update adjustments a set payout_id = taken.payout_id
    from (
      select a2.id, draft.id as payout_id
      from unnest(${drafts.map((d) => d.id)}::text[], ${drafts.map((d) => d.productId)}::text[],
                  ${drafts.map((d) => d.partnershipId)}::text[]) as draft(id, product_id, partnership_id)
      join adjustments a2 on a2.product_id = draft.product_id and a2.partnership_id = draft.partnership_id
      where a2.payout_id is null
      order by a2.id
      for update of a2
    ) taken
    where a.id = taken.id`;
}

/** Makes payouts' adjustments unapplied again (payouts rejected or abandoned). */
export async function unapplyAdjustments(sql: Queryable, payoutIds: string[]): Promise<void> {
  if (payoutIds.length === 0) return;
  await sql`update adjustments set payout_id = null where payout_id = any(${payoutIds}::text[])`;
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
