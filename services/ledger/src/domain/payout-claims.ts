import { DomainError, type Queryable, type Sql, type TransactionSql } from "@affiliate/platform";
import { getCommissionOrThrow } from "../store/commissions.js";
import { holdAgainWhileDisputed } from "../store/holds.js";
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
): Promise<{ partnershipId: string; amountCents: bigint; commissionCount: number }[]> {
  // The sum stays numeric: an exact bigint however many commissions it adds up.
  return sql`
    select partnership_id, sum(amount_cents) as amount_cents, count(*)::int8 as commission_count
    from commissions where product_id = ${productId} and status = 'approved' and payout_id is null
      and hold_reason is null
    group by partnership_id order by partnership_id`;
}

/** One partnership's approved, unlinked commissions that no dispute holds, asked for one payout. */
export interface PayoutClaim {
  partnershipId: string;
  payoutId: string;
}

export interface ClaimedCommission {
  commissionId: string;
  payoutId: string;
  amountCents: number;
}

/**
 * Payouts per ClaimCommissions or ReleaseCommissions call: a generation sends each batch (500
 * partnerships) in one call, and the bound keeps one call's transaction, its row locks and its
 * answer from growing without limit.
 */
export const maxPayoutsPerCall = 1000;

const payoutIdPattern = /^po_[0-9a-f]{32}$/;

function validateClaims(claims: PayoutClaim[]): void {
  if (claims.length > maxPayoutsPerCall) {
    throw DomainError.invalidField("claims", `At most ${maxPayoutsPerCall} claims per call`);
  }
  if (claims.some((claim) => !payoutIdPattern.test(claim.payoutId))) {
    throw DomainError.invalidField("claims.payout_id", "Must be a payout id");
  }
  // A partnership claimed twice would split its commissions between two payouts at random,
  // a payout id twice would mix two partnerships in one payout.
  if (new Set(claims.map((claim) => claim.partnershipId)).size < claims.length) {
    throw DomainError.invalidField("claims.partnership_id", "Each partnership at most once per call");
  }
  if (new Set(claims.map((claim) => claim.payoutId)).size < claims.length) {
    throw DomainError.invalidField("claims.payout_id", "Each payout id at most once per call");
  }
}

/**
 * Links each claim's partnership's approved, unlinked, unheld commissions to the claim's payout
 * id, in one transaction, and returns every commission linked to any of the payout ids (by
 * payout id, then id): a repeat returns the same set.
 *
 * The rows are locked in id order before they are changed, so two bulk claims over overlapping
 * partnerships wait for each other instead of deadlocking. A row that waited for a lock is
 * checked again once the other transaction commits: if a claim linked it (payout_id is no longer
 * null) or a dispute held it (hold_reason is set), it is skipped, so a commission is never
 * linked twice, nor both held and claimed.
 */
export async function claimCommissions(
  sql: Sql,
  productId: string,
  claims: PayoutClaim[],
): Promise<ClaimedCommission[]> {
  validateClaims(claims);
  if (claims.length === 0) return [];
  const partnershipIds = claims.map((claim) => claim.partnershipId);
  const payoutIds = claims.map((claim) => claim.payoutId);
  return sql.begin(async (tx) => {
    await tx`
      update commissions c set payout_id = claimed.payout_id, updated_at = now()
      from (
        select c2.id, claims.payout_id
        from unnest(${partnershipIds}::text[], ${payoutIds}::text[]) as claims(partnership_id, payout_id)
        join commissions c2 on c2.product_id = ${productId} and c2.partnership_id = claims.partnership_id
        where c2.status = 'approved' and c2.payout_id is null and c2.hold_reason is null
        order by c2.id
        for update of c2
      ) claimed
      where c.id = claimed.id`;
    // "payout_id is not null" says what `= any(array)` implies, so that even a generic plan
    // (an array of unknown length) may read the partial index commissions_by_payout.
    return tx<ClaimedCommission[]>`
      select id as commission_id, payout_id, amount_cents from commissions
      where product_id = ${productId} and payout_id is not null and payout_id = any(${payoutIds}::text[])
      order by payout_id, id`;
  });
}

/**
 * Unlinks every unpaid commission of the payouts (rejected or abandoned), at most
 * maxPayoutsPerCall payout ids at once, in one transaction; a repeat unlinks nothing. Returns how
 * many it unlinked.
 */
export async function unlinkCommissions(sql: Sql, productId: string, payoutIds: string[]): Promise<number> {
  if (payoutIds.length > maxPayoutsPerCall) {
    throw DomainError.invalidField("payout_ids", `At most ${maxPayoutsPerCall} payout ids per call`);
  }
  if (payoutIds.length === 0) return 0;
  return sql.begin((tx) => unlinkCommissionsIn(tx, productId, payoutIds));
}

/**
 * unlinkCommissions in the caller's transaction (a payout.rejected consumer's, which records the
 * event applied in the same commit), for payout ids already within maxPayoutsPerCall.
 *
 * A commission whose payment was disputed while it sat in the payout was not held then (it was
 * in a payout); unlinked, it is held now, in this transaction, so no payout claims it before the
 * dispute closes. Two statements: the second reads the holds committed after the first locked
 * the rows (a hold locks the payment's commissions before it decides, so one that ran into these
 * locks commits after this transaction and finds the commission unlinked).
 */
export async function unlinkCommissionsIn(tx: TransactionSql, productId: string, payoutIds: string[]): Promise<number> {
  if (payoutIds.length === 0) return 0;
  // "payout_id is not null": as in claimCommissions, for the partial index.
  const unlinked = await tx<{ id: string }[]>`
    update commissions set payout_id = null, updated_at = now()
    where product_id = ${productId} and payout_id is not null and payout_id = any(${payoutIds}::text[])
      and status <> 'paid'
    returning id`;
  if (unlinked.length > 0)
    await holdAgainWhileDisputed(
      tx,
      unlinked.map((row) => row.id),
    );
  return unlinked.length;
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
