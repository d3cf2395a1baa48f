import { DomainError, type Queryable } from "@affiliate/platform";
import type { Payout, PayoutStatus } from "../domain/types.js";

const payoutColumns = (sql: Queryable) => sql`
  id, product_id, partnership_id, status, amount_cents, adjustment_cents, commission_count, created_at,
  approved_at, paid_at, gateway_transfer_id, failure_reason`;

/** Reserves a payout id for a partnership: the draft row that claims are made for. */
export async function insertDraft(
  sql: Queryable,
  draft: { id: string; productId: string; partnershipId: string },
): Promise<void> {
  await sql`
    insert into payouts (id, product_id, partnership_id, status)
    values (${draft.id}, ${draft.productId}, ${draft.partnershipId}, 'draft')`;
}

export interface Draft {
  id: string;
  productId: string;
  partnershipId: string;
}

/** Locks the draft; undefined when it is no longer a draft (finished or abandoned meanwhile). */
export async function lockDraft(sql: Queryable, id: string): Promise<Draft | undefined> {
  const [row] = await sql<Draft[]>`
    select id, product_id, partnership_id from payouts where id = ${id} and status = 'draft' for update`;
  return row;
}

/**
 * Locks the oldest draft created before `before` that no one else holds: a generation that
 * stopped between claiming and finishing. SKIP LOCKED lets replicas recover different drafts;
 * `skip` names drafts this run already failed on.
 */
export async function lockStaleDraft(sql: Queryable, before: Date, skip: string[] = []): Promise<Draft | undefined> {
  const [row] = await sql<Draft[]>`
    select id, product_id, partnership_id from payouts
    where status = 'draft' and created_at < ${before}
      ${skip.length > 0 ? sql`and id not in ${sql(skip)}` : sql``}
    order by created_at limit 1 for update skip locked`;
  return row;
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

/** Whether a payout row with this id exists in any status. */
export async function payoutExists(sql: Queryable, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from payouts where id = ${id}`;
  return row !== undefined;
}

export async function deletePayout(sql: Queryable, id: string): Promise<void> {
  await sql`delete from payouts where id = ${id}`;
}

/** A payout that RPCs may show (never a draft); NOT_FOUND for another product's. */
export async function getPayoutOrThrow(sql: Queryable, productId: string, id: string): Promise<Payout> {
  const [row] = await sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts
    where product_id = ${productId} and id = ${id} and status <> 'draft'`;
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
 * Recomputes a payout's amount, adjustment sum and commission count from its links and linked
 * adjustments, the invariant every open payout keeps (contract 8), and returns the payout.
 */
export async function recomputePayout(sql: Queryable, id: string): Promise<Payout> {
  const [row] = await sql<Payout[]>`
    update payouts p set
      amount_cents = links.total + adjustments.total,
      adjustment_cents = adjustments.total,
      commission_count = links.count,
      updated_at = now()
    from
      (select coalesce(sum(amount_cents), 0)::int8 as total, count(*)::int8 as count
       from payout_commissions where payout_id = ${id}) links,
      (select coalesce(sum(amount_cents), 0)::int8 as total from adjustments where payout_id = ${id}) adjustments
    where p.id = ${id}
    returning ${payoutColumns(sql)}`;
  if (!row) throw new Error(`payout ${id} vanished while recomputing`);
  return row;
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
