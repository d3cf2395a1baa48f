import { DomainError, type Queryable } from "@affiliate/platform";
import type { Payout, PayoutStatus } from "../domain/types.js";

/** A payout's amounts are sums: read as numeric, they reach the code as exact bigints. */
export const payoutColumns = (sql: Queryable) => sql`
  id, product_id, partnership_id, status, amount_cents::numeric as amount_cents,
  adjustment_cents::numeric as adjustment_cents, commission_count, created_at, approved_at, paid_at,
  gateway_transfer_id, failure_reason`;

export interface Draft {
  id: string;
  productId: string;
  partnershipId: string;
}

/** Reserves payout ids for partnerships: the draft rows that claims are made for. */
export async function insertDrafts(sql: Queryable, drafts: Draft[]): Promise<void> {
  if (drafts.length === 0) return;
  await sql`
    insert into payouts (id, product_id, partnership_id, status)
    select draft.id, draft.product_id, draft.partnership_id, 'draft'
    from unnest(${drafts.map((d) => d.id)}::text[], ${drafts.map((d) => d.productId)}::text[],
                ${drafts.map((d) => d.partnershipId)}::text[]) as draft(id, product_id, partnership_id)`;
}

/**
 * Locks those of `ids` that are still drafts, in id order (so two lockers of overlapping sets
 * wait rather than deadlock); a missing id was finished or abandoned meanwhile.
 */
export async function lockDrafts(sql: Queryable, ids: string[]): Promise<Draft[]> {
  return sql<Draft[]>`
    select id, product_id, partnership_id from payouts
    where id = any(${ids}::text[]) and status = 'draft'
    order by id for update`;
}

/**
 * Locks up to `limit` drafts created before `before` that no one else holds, all of the product
 * of the oldest such draft: generations that stopped between claiming and finishing. SKIP
 * LOCKED lets replicas recover different drafts; `skip` names drafts this run already failed on.
 * One product per batch: a claim and a minimum are per product.
 */
export async function lockStaleDrafts(sql: Queryable, before: Date, skip: string[], limit: number): Promise<Draft[]> {
  return sql<Draft[]>`
    with oldest as (
      select product_id from payouts
      where status = 'draft' and created_at < ${before} and id <> all(${skip}::text[])
      order by created_at, id limit 1
      for update skip locked)
    select id, product_id, partnership_id from payouts
    where status = 'draft' and created_at < ${before} and id <> all(${skip}::text[])
      and product_id = (select product_id from oldest)
    order by created_at, id limit ${limit}
    for update skip locked`;
}

/** Locks a payout row in any status (draft included); undefined when there is none. */
export async function lockAnyPayout(
  sql: Queryable,
  id: string,
): Promise<{ id: string; productId: string; status: PayoutStatus | "draft" } | undefined> {
  const [row] = await sql<{ id: string; productId: string; status: PayoutStatus | "draft" }[]>`
    select id, product_id, status from payouts where id = ${id} for update`;
  return row;
}

/** Those of `ids` that name a payout row in any status. */
export async function existingPayoutIds(sql: Queryable, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }[]>`select id from payouts where id = any(${ids}::text[])`;
  return new Set(rows.map((row) => row.id));
}

export async function deletePayouts(sql: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`delete from payouts where id = any(${ids}::text[])`;
}

/** A payout that RPCs may show (never a draft); NOT_FOUND for another product's. */
export async function getPayoutOrThrow(
  sql: Queryable,
  productId: string,
  id: string,
  partnershipId?: string,
): Promise<Payout> {
  const [row] = await sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts
    where product_id = ${productId} and id = ${id} and status <> 'draft'
      ${partnershipId === undefined ? sql`` : sql`and partnership_id = ${partnershipId}`}`;
  if (!row) throw new DomainError("not_found", `Payout ${id} not found`);
  return row;
}

/** Locks and reads a visible payout of the product; NOT_FOUND otherwise. */
export async function lockPayoutOrThrow(sql: Queryable, productId: string, id: string): Promise<Payout> {
  const [row] = await sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts
    where product_id = ${productId} and id = ${id} and status <> 'draft' for update`;
  if (!row) throw new DomainError("not_found", `Payout ${id} not found`);
  return row;
}

/**
 * Recomputes payouts' amounts, adjustment sums and commission counts from their links and linked
 * adjustments, the invariant every open payout keeps (contract 8), in one statement, and returns
 * the payouts.
 */
export async function recomputePayouts(sql: Queryable, ids: string[]): Promise<Payout[]> {
  if (ids.length === 0) return [];
  return sql<Payout[]>`
    update payouts p set
      amount_cents = coalesce(links.total, 0) + coalesce(adjustments.total, 0),
      adjustment_cents = coalesce(adjustments.total, 0),
      commission_count = coalesce(links.count, 0),
      updated_at = now()
    from unnest(${ids}::text[]) as target(payout_id)
      left join (select payout_id, sum(amount_cents) as total, count(*)::int8 as count
                 from payout_commissions where payout_id = any(${ids}::text[]) group by payout_id) links
        using (payout_id)
      left join (select payout_id, sum(amount_cents) as total
                 from adjustments where payout_id = any(${ids}::text[]) group by payout_id) adjustments
        using (payout_id)
    where p.id = target.payout_id
    returning ${payoutColumns(sql)}`;
}

/** recomputePayouts for one payout, which must exist. */
export async function recomputePayout(sql: Queryable, id: string): Promise<Payout> {
  const [row] = await recomputePayouts(sql, [id]);
  if (!row) throw new Error(`payout ${id} vanished while recomputing`);
  return row;
}

/** Makes finished drafts pending: visible, and open to actions. Returns them in id order. */
export async function markPending(sql: Queryable, ids: string[]): Promise<Payout[]> {
  if (ids.length === 0) return [];
  const rows = await sql<Payout[]>`
    update payouts set status = 'pending', updated_at = now()
    where id = any(${ids}::text[]) and status = 'draft'
    returning ${payoutColumns(sql)}`;
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export async function setStatus(
  sql: Queryable,
  id: string,
  change: {
    status: PayoutStatus;
    approvedAt?: Date | undefined;
    paidAt?: Date | undefined;
    gatewayTransferId?: string | null | undefined;
    failureReason?: string | null | undefined;
  },
): Promise<Payout> {
  const [row] = await sql<Payout[]>`
    update payouts set
      status = ${change.status},
      approved_at = coalesce(${change.approvedAt ?? null}, approved_at),
      paid_at = coalesce(${change.paidAt ?? null}, paid_at),
      gateway_transfer_id = coalesce(${change.gatewayTransferId ?? null}, gateway_transfer_id),
      failure_reason = coalesce(${change.failureReason ?? null}, failure_reason),
      updated_at = now()
    where id = ${id}
    returning ${payoutColumns(sql)}`;
  if (!row) throw new Error(`payout ${id} vanished while updating`);
  return row;
}

/** The partnership's newest open payout, locked; undefined when it has none. */
export async function lockNewestOpenPayout(
  sql: Queryable,
  productId: string,
  partnershipId: string,
): Promise<Payout | undefined> {
  const [row] = await sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts
    where product_id = ${productId} and partnership_id = ${partnershipId}
      and status in ('pending', 'approved', 'failed')
    order by id desc limit 1 for update`;
  return row;
}

export async function listPayouts(
  sql: Queryable,
  query: {
    productId: string;
    status?: PayoutStatus | undefined;
    partnershipId?: string | undefined;
    afterId?: string | undefined;
    limit: number;
  },
): Promise<Payout[]> {
  return sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts
    where product_id = ${query.productId}
      ${query.status ? sql`and status = ${query.status}` : sql`and status <> 'draft'`}
      ${query.partnershipId ? sql`and partnership_id = ${query.partnershipId}` : sql``}
      ${query.afterId ? sql`and id < ${query.afterId}` : sql``}
    order by id desc
    limit ${query.limit}`;
}

/** One part of a payout's amount: a linked commission at its linked amount, or a linked adjustment. */
export interface PayoutLine {
  kind: "commission" | "adjustment";
  id: string;
  commissionId: string;
  amountCents: number;
}

/** The payout's links, then its adjustments, each oldest first (ids sort by time). */
export async function payoutLines(sql: Queryable, payoutId: string): Promise<PayoutLine[]> {
  return (await linesOfPayouts(sql, [payoutId])).get(payoutId) ?? [];
}

/**
 * The lines of several payouts in one statement, by payout id (every requested id present, with
 * no lines when it has none), each payout's ordered as payoutLines orders them.
 */
export async function linesOfPayouts(sql: Queryable, payoutIds: readonly string[]): Promise<Map<string, PayoutLine[]>> {
  const lines = new Map<string, PayoutLine[]>(payoutIds.map((id) => [id, []]));
  if (payoutIds.length === 0) return lines;
  const rows = await sql<(PayoutLine & { payoutId: string })[]>`
    select payout_id, 'commission' as kind, commission_id as id, commission_id, amount_cents, 0 as part
    from payout_commissions where payout_id in ${sql(payoutIds)}
    union all
    select payout_id, 'adjustment', id, commission_id, amount_cents, 1
    from adjustments where payout_id in ${sql(payoutIds)}
    order by payout_id, part, id`;
  for (const { payoutId, kind, id, commissionId, amountCents } of rows) {
    lines.get(payoutId)?.push({ kind, id, commissionId, amountCents });
  }
  return lines;
}
