import type { Queryable } from "@affiliate/platform";
import type { Metrics, PartnershipStats } from "../domain/types.js";

/** Rollup rows per product-day and per partnership; readers sum them. */
export const shardCount = 16;

export type MetricsDelta = Partial<Metrics>;

/** Adds to the product's rollup of one UTC day (`YYYY-MM-DD`) on the given shard. */
export async function addToDailyRollup(
  sql: Queryable,
  row: { productId: string; day: string; shard: number },
  delta: Required<MetricsDelta>,
): Promise<void> {
  await sql`
    insert into daily_rollups (product_id, day, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
    values (${row.productId}, ${row.day}::date, ${row.shard}, ${delta.clicks}, ${delta.signups}, ${delta.conversions},
            ${delta.revenueCents}, ${delta.commissionsCents})
    on conflict (product_id, day, shard) do update set
      clicks = daily_rollups.clicks + excluded.clicks,
      signups = daily_rollups.signups + excluded.signups,
      conversions = daily_rollups.conversions + excluded.conversions,
      revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents,
      commissions_cents = daily_rollups.commissions_cents + excluded.commissions_cents`;
}

export interface PartnershipDelta {
  clicks?: number;
  conversions?: number;
  pendingCount?: number;
  pendingAmountCents?: number;
  approvedCount?: number;
  approvedAmountCents?: number;
  paidCount?: number;
  paidAmountCents?: number;
}

export async function addToPartnershipRollup(
  sql: Queryable,
  row: { productId: string; partnershipId: string; shard: number },
  delta: Required<PartnershipDelta>,
): Promise<void> {
  await sql`
    insert into partnership_rollups (partnership_id, shard, product_id, clicks, conversions, pending_count,
      pending_amount_cents, approved_count, approved_amount_cents, paid_count, paid_amount_cents)
    values (${row.partnershipId}, ${row.shard}, ${row.productId}, ${delta.clicks}, ${delta.conversions},
            ${delta.pendingCount}, ${delta.pendingAmountCents}, ${delta.approvedCount},
            ${delta.approvedAmountCents}, ${delta.paidCount}, ${delta.paidAmountCents})
    on conflict (partnership_id, shard) do update set
      clicks = partnership_rollups.clicks + excluded.clicks,
      conversions = partnership_rollups.conversions + excluded.conversions,
      pending_count = partnership_rollups.pending_count + excluded.pending_count,
      pending_amount_cents = partnership_rollups.pending_amount_cents + excluded.pending_amount_cents,
      approved_count = partnership_rollups.approved_count + excluded.approved_count,
      approved_amount_cents = partnership_rollups.approved_amount_cents + excluded.approved_amount_cents,
      paid_count = partnership_rollups.paid_count + excluded.paid_count,
      paid_amount_cents = partnership_rollups.paid_amount_cents + excluded.paid_amount_cents`;
}

const zeroMetrics: Metrics = { clicks: 0, signups: 0, conversions: 0, revenueCents: 0, commissionsCents: 0 };

/** Sums of whole UTC days in [fromDay, toDay) from the rollups. */
export async function sumDailyRollups(
  sql: Queryable,
  productId: string,
  fromDay: string,
  toDay: string,
): Promise<Metrics> {
  if (fromDay >= toDay) return { ...zeroMetrics };
  const [row] = await sql<Metrics[]>`
    select coalesce(sum(clicks), 0)::int8 as clicks, coalesce(sum(signups), 0)::int8 as signups,
           coalesce(sum(conversions), 0)::int8 as conversions, coalesce(sum(revenue_cents), 0)::int8 as revenue_cents,
           coalesce(sum(commissions_cents), 0)::int8 as commissions_cents
    from daily_rollups where product_id = ${productId} and day >= ${fromDay}::date and day < ${toDay}::date`;
  return row ?? { ...zeroMetrics };
}

/** Sums of the live events (and their commissions) in [from, to): for the partial days at a window's edges. */
export async function sumEvents(sql: Queryable, productId: string, from: Date, to: Date): Promise<Metrics> {
  if (from >= to) return { ...zeroMetrics };
  const [events] = await sql<Omit<Metrics, "commissionsCents">[]>`
    select count(*) filter (where event_type = 'click')::int8 as clicks,
           count(*) filter (where event_type = 'signup')::int8 as signups,
           count(*) filter (where event_type = 'payment' and partnership_id is not null)::int8 as conversions,
           coalesce(sum(amount_cents) filter (where event_type = 'payment' and partnership_id is not null), 0)::int8
             as revenue_cents
    from tracking_events where product_id = ${productId} and occurred_at >= ${from} and occurred_at < ${to}`;
  const [commissions] = await sql<{ commissionsCents: number }[]>`
    select coalesce(sum(amount_cents), 0)::int8 as commissions_cents from commissions
    where product_id = ${productId} and payment_occurred_at >= ${from} and payment_occurred_at < ${to}
      and status <> 'rejected'`;
  return { ...zeroMetrics, ...events, commissionsCents: commissions?.commissionsCents ?? 0 };
}

/** Per-day sums over [fromDay, toDay] inclusive, only days that have rows. */
export async function dailySeries(
  sql: Queryable,
  productId: string,
  fromDay: string,
  toDay: string,
): Promise<(Metrics & { day: string })[]> {
  return sql<(Metrics & { day: string })[]>`
    select to_char(day, 'YYYY-MM-DD') as day, sum(clicks)::int8 as clicks, sum(signups)::int8 as signups,
           sum(conversions)::int8 as conversions, sum(revenue_cents)::int8 as revenue_cents,
           sum(commissions_cents)::int8 as commissions_cents
    from daily_rollups where product_id = ${productId} and day between ${fromDay}::date and ${toDay}::date
    group by day`;
}

export async function partnershipStats(
  sql: Queryable,
  productId: string,
  partnershipIds: string[],
): Promise<Map<string, PartnershipStats>> {
  const result = new Map<string, PartnershipStats>();
  if (partnershipIds.length === 0) return result;
  const rows = await sql<(PartnershipStats & { partnershipId: string })[]>`
    select partnership_id, sum(clicks)::int8 as clicks, sum(conversions)::int8 as conversions,
           sum(pending_amount_cents + approved_amount_cents + paid_amount_cents)::int8 as earned_cents,
           sum(pending_count)::int8 as pending_count, sum(approved_count)::int8 as approved_count,
           sum(pending_amount_cents)::int8 as pending_amount_cents, sum(approved_amount_cents)::int8 as approved_amount_cents
    from partnership_rollups where product_id = ${productId} and partnership_id in ${sql(partnershipIds)}
    group by partnership_id`;
  for (const { partnershipId, ...stats } of rows) result.set(partnershipId, stats);
  return result;
}
