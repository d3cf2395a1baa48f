import { DomainError, type Queryable, type Sql } from "@affiliate/platform";
import { getCommissionOrThrow } from "../store/commissions.js";
import { recordCommissionChange } from "./commission-changes.js";
import { RollupChanges } from "./rollup-changes.js";
import type { Commission } from "./types.js";

/**
 * The ledger's side of payouts (architecture: payout generation and settlement). The payouts
 * service decides; the ledger links, unlinks and settles its own commission rows, idempotently,
 * so every step can be retried until it is done.
 */

export async function listPayableBalances(
  sql: Queryable,
  productId: string,
): Promise<{ partnershipId: string; amountCents: number; commissionCount: number }[]> {
  return sql`
    select partnership_id, sum(amount_cents)::int8 as amount_cents, count(*)::int8 as commission_count
    from commissions where product_id = ${productId} and status = 'approved' and payout_id is null
    group by partnership_id order by partnership_id`;
}

/** Links the partnership's approved, unlinked commissions to `payoutId`; a repeat returns the same set. */
export async function claimCommissions(
  sql: Sql,
  query: { productId: string; partnershipId: string; payoutId: string },
): Promise<{ commissionId: string; amountCents: number }[]> {
  if (!/^po_[0-9a-f]{32}$/.test(query.payoutId)) throw DomainError.invalidField("payout_id", "Must be a payout id");
  return sql.begin(async (tx) => {
    await tx`
      update commissions set payout_id = ${query.payoutId}, updated_at = now()
      where product_id = ${query.productId} and partnership_id = ${query.partnershipId}
        and status = 'approved' and payout_id is null`;
    return tx<{ commissionId: string; amountCents: number }[]>`
      select id as commission_id, amount_cents from commissions
      where product_id = ${query.productId} and payout_id = ${query.payoutId} order by id`;
  });
}

/** Unlinks every unpaid commission of the payout (rejected or abandoned); a repeat releases nothing. */
export async function releaseCommissions(sql: Queryable, productId: string, payoutId: string): Promise<number> {
  const rows = await sql`
    update commissions set payout_id = null, updated_at = now()
    where product_id = ${productId} and payout_id = ${payoutId} and status <> 'paid'
    returning id`;
  return rows.length;
}

/**
 * Marks the payout's approved commissions paid (the payout completed). Refunded or rejected
 * commissions in it keep their status. A repeat changes nothing.
 */
export async function settleCommissions(tx: Queryable, productId: string, payoutId: string): Promise<Commission[]> {
  const settled = await tx<{ id: string }[]>`
    update commissions set status = 'paid', updated_at = now()
    where product_id = ${productId} and payout_id = ${payoutId} and status = 'approved'
    returning id`;
  const commissions: Commission[] = [];
  const changes = new RollupChanges();
  for (const { id } of settled) {
    const commission = await getCommissionOrThrow(tx, productId, id);
    recordCommissionChange(
      changes,
      commission,
      { status: "approved", amountCents: commission.amountCents },
      commission,
    );
    commissions.push(commission);
  }
  await changes.flush(tx);
  return commissions;
}
