import type { Queryable } from "@affiliate/platform";
import { type Metrics, type PartnershipStats, zeroMetrics } from "../domain/types.js";

/** What one transaction adds to a day's figures: a few events' worth, so plain numbers. */
export type MetricsDelta = { [Figure in keyof Metrics]?: number };

/**
 * One transaction's activity of a product in one UTC hour (its start, an ISO timestamp), of one
 * of its partnerships or (null) unattributed.
 */
export interface ActivityDelta {
  productId: string;
  partnershipId: string | null;
  hour: string;
  delta: Required<MetricsDelta>;
}

/**
 * Records activity deltas, one row each, in one statement. A plain insert: no row exists that
 * another writer also changes, so concurrent writers of one product never wait on each other.
 */
export async function insertActivityDeltas(sql: Queryable, rows: ActivityDelta[]): Promise<void> {
  if (rows.length === 0) return;
  const column = (figure: keyof Metrics) => rows.map((row) => row.delta[figure]);
  await sql`
    insert into activity_deltas (product_id, partnership_id, hour, clicks, signups, conversions, revenue_cents,
                                 commissions_cents)
    select * from unnest(${rows.map((row) => row.productId)}::text[], ${rows.map((row) => row.partnershipId)}::text[],
                         ${rows.map((row) => row.hour)}::timestamptz[], ${column("clicks")}::int8[],
                         ${column("signups")}::int8[], ${column("conversions")}::int8[],
                         ${column("revenueCents")}::int8[], ${column("commissionsCents")}::int8[])`;
}

/**
 * Whose figures a stats read sums: the product's, or one of its partnerships' (filtered by the
 * product too, so another product's id reads zeros).
 */
export type StatsScope = { productId: string; partnershipId?: string | undefined };

/**
 * The figure views of a scope (migration 0010: rollups and unfolded deltas, a row each), and the
 * filter of its rows (on the view's alias in the query).
 */
function figuresOf(sql: Queryable, scope: StatsScope) {
  const { productId, partnershipId } = scope;
  if (partnershipId === undefined) {
    return {
      daily: sql`daily_figures`,
      hourly: sql`hourly_figures`,
      owner: (alias: string) => sql`${sql(alias)}.product_id = ${productId}`,
    };
  }
  return {
    daily: sql`partnership_daily_figures`,
    hourly: sql`partnership_hourly_figures`,
    owner: (alias: string) =>
      sql`${sql(alias)}.partnership_id = ${partnershipId} and ${sql(alias)}.product_id = ${productId}`,
  };
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

/** One transaction's change to a partnership's all-time figures. */
export interface PartnershipFiguresDelta {
  productId: string;
  partnershipId: string;
  delta: Required<PartnershipDelta>;
}

/** Records partnership deltas, one row each, in one plain insert (as insertActivityDeltas). */
export async function insertPartnershipDeltas(sql: Queryable, rows: PartnershipFiguresDelta[]): Promise<void> {
  if (rows.length === 0) return;
  const column = (figure: keyof PartnershipDelta) => rows.map((row) => row.delta[figure]);
  await sql`
    insert into partnership_deltas (partnership_id, product_id, clicks, conversions, pending_count,
      pending_amount_cents, approved_count, approved_amount_cents, paid_count, paid_amount_cents)
    select * from unnest(${rows.map((row) => row.partnershipId)}::text[], ${rows.map((row) => row.productId)}::text[],
                         ${column("clicks")}::int8[], ${column("conversions")}::int8[], ${column("pendingCount")}::int8[],
                         ${column("pendingAmountCents")}::int8[], ${column("approvedCount")}::int8[],
                         ${column("approvedAmountCents")}::int8[], ${column("paidCount")}::int8[],
                         ${column("paidAmountCents")}::int8[])`;
}

/**
 * Moves up to `limit` activity deltas into the four activity rollups (product and partnership,
 * day and hour), in one statement: a reader of the figure views sees them on one side or the
 * other, never both or neither. Only the compaction calls this, one replica at a time (see
 * domain/compact-rollups.ts), so its upserts meet no other writer of the rollups. Returns how
 * many deltas it moved.
 */
export async function foldActivityDeltas(sql: Queryable, limit: number): Promise<number> {
  const [row] = await sql<{ folded: number }[]>`
    with moved as (
      delete from activity_deltas where ctid = any(array(select ctid from activity_deltas limit ${limit}))
      returning product_id, partnership_id, hour, clicks, signups, conversions, revenue_cents, commissions_cents
    ),
    daily as (
      insert into daily_rollups (product_id, day, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
      select product_id, (hour at time zone 'UTC')::date, 0, sum(clicks), sum(signups), sum(conversions),
             sum(revenue_cents), sum(commissions_cents)
      from moved group by 1, 2
      on conflict (product_id, day, shard) do update set
        clicks = daily_rollups.clicks + excluded.clicks, signups = daily_rollups.signups + excluded.signups,
        conversions = daily_rollups.conversions + excluded.conversions,
        revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = daily_rollups.commissions_cents + excluded.commissions_cents
    ),
    hourly as (
      insert into hourly_rollups (product_id, hour, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
      select product_id, hour, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
             sum(commissions_cents)
      from moved group by 1, 2
      on conflict (product_id, hour, shard) do update set
        clicks = hourly_rollups.clicks + excluded.clicks, signups = hourly_rollups.signups + excluded.signups,
        conversions = hourly_rollups.conversions + excluded.conversions,
        revenue_cents = hourly_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = hourly_rollups.commissions_cents + excluded.commissions_cents
    ),
    partnership_daily as (
      insert into partnership_daily_rollups (partnership_id, day, shard, product_id, clicks, signups, conversions,
                                             revenue_cents, commissions_cents)
      select partnership_id, (hour at time zone 'UTC')::date, 0, min(product_id), sum(clicks), sum(signups),
             sum(conversions), sum(revenue_cents), sum(commissions_cents)
      from moved where partnership_id is not null group by 1, 2
      on conflict (partnership_id, day, shard) do update set
        clicks = partnership_daily_rollups.clicks + excluded.clicks,
        signups = partnership_daily_rollups.signups + excluded.signups,
        conversions = partnership_daily_rollups.conversions + excluded.conversions,
        revenue_cents = partnership_daily_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = partnership_daily_rollups.commissions_cents + excluded.commissions_cents
    ),
    partnership_hourly as (
      insert into partnership_hourly_rollups (partnership_id, hour, shard, product_id, clicks, signups, conversions,
                                              revenue_cents, commissions_cents)
      select partnership_id, hour, 0, min(product_id), sum(clicks), sum(signups), sum(conversions),
             sum(revenue_cents), sum(commissions_cents)
      from moved where partnership_id is not null group by 1, 2
      on conflict (partnership_id, hour, shard) do update set
        clicks = partnership_hourly_rollups.clicks + excluded.clicks,
        signups = partnership_hourly_rollups.signups + excluded.signups,
        conversions = partnership_hourly_rollups.conversions + excluded.conversions,
        revenue_cents = partnership_hourly_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = partnership_hourly_rollups.commissions_cents + excluded.commissions_cents
    )
    select count(*)::int as folded from moved`;
  return row?.folded ?? 0;
}

/** Moves up to `limit` partnership deltas into the partnerships' all-time rollups, as foldActivityDeltas does. */
export async function foldPartnershipDeltas(sql: Queryable, limit: number): Promise<number> {
  const [row] = await sql<{ folded: number }[]>`
    with moved as (
      delete from partnership_deltas where ctid = any(array(select ctid from partnership_deltas limit ${limit}))
      returning partnership_id, product_id, clicks, conversions, pending_count, pending_amount_cents, approved_count,
                approved_amount_cents, paid_count, paid_amount_cents
    ),
    folded as (
      insert into partnership_rollups (partnership_id, shard, product_id, clicks, conversions, pending_count,
        pending_amount_cents, approved_count, approved_amount_cents, paid_count, paid_amount_cents)
      select partnership_id, 0, min(product_id), sum(clicks), sum(conversions), sum(pending_count),
             sum(pending_amount_cents), sum(approved_count), sum(approved_amount_cents), sum(paid_count),
             sum(paid_amount_cents)
      from moved group by 1
      on conflict (partnership_id, shard) do update set
        clicks = partnership_rollups.clicks + excluded.clicks,
        conversions = partnership_rollups.conversions + excluded.conversions,
        pending_count = partnership_rollups.pending_count + excluded.pending_count,
        pending_amount_cents = partnership_rollups.pending_amount_cents + excluded.pending_amount_cents,
        approved_count = partnership_rollups.approved_count + excluded.approved_count,
        approved_amount_cents = partnership_rollups.approved_amount_cents + excluded.approved_amount_cents,
        paid_count = partnership_rollups.paid_count + excluded.paid_count,
        paid_amount_cents = partnership_rollups.paid_amount_cents + excluded.paid_amount_cents
    )
    select count(*)::int as folded from moved`;
  return row?.folded ?? 0;
}

/**
 * A part of a stats window, [from, to): whole UTC days summed from the daily figures, or whole
 * UTC hours (a partial day at a window's edge) summed from the hourly figures.
 */
export interface WindowPart {
  window: number;
  source: "days" | "hours";
  from: Date;
  to: Date;
}

/**
 * The metrics of each window (by index, zeros for a window with no activity), summed from its
 * parts in one statement: a stats request is one round trip and one snapshot (the rollups and the
 * deltas not yet folded into them agree), whatever the number of parts, and reads rollup rows and
 * deltas only, never an event. Sums of cents stay numeric, which reaches the code as an exact
 * bigint.
 */
export async function sumWindows(sql: Queryable, scope: StatsScope, parts: WindowPart[]): Promise<Metrics[]> {
  const windows = Math.max(0, ...parts.map((part) => part.window + 1));
  if (parts.length === 0) return [];
  const figures = figuresOf(sql, scope);
  // Days are bounded by their day and by their hour: the first is the rollups' index, the
  // second the deltas'.
  const rows = await sql<(Metrics & { window: number })[]>`
    with parts (window_index, source, from_at, to_at) as (
      select * from unnest(${parts.map((p) => p.window)}::int[], ${parts.map((p) => p.source)}::text[],
                           ${parts.map((p) => p.from.toISOString())}::timestamptz[],
                           ${parts.map((p) => p.to.toISOString())}::timestamptz[])
    ),
    sums (window_index, clicks, signups, conversions, revenue_cents, commissions_cents) as (
      select p.window_index, d.clicks, d.signups, d.conversions, d.revenue_cents, d.commissions_cents
      from parts p join ${figures.daily} d on ${figures.owner("d")}
        and d.day >= (p.from_at at time zone 'UTC')::date and d.day < (p.to_at at time zone 'UTC')::date
        and d.hour >= p.from_at and d.hour < p.to_at
      where p.source = 'days'
      union all
      select p.window_index, h.clicks, h.signups, h.conversions, h.revenue_cents, h.commissions_cents
      from parts p join ${figures.hourly} h on ${figures.owner("h")} and h.hour >= p.from_at and h.hour < p.to_at
      where p.source = 'hours'
    )
    select window_index as window, sum(clicks)::int8 as clicks, sum(signups)::int8 as signups,
           sum(conversions)::int8 as conversions, sum(revenue_cents) as revenue_cents,
           sum(commissions_cents) as commissions_cents
    from sums group by window_index`;
  const byWindow = new Map(rows.map(({ window, ...metrics }) => [window, metrics]));
  return Array.from({ length: windows }, (_, window) => byWindow.get(window) ?? { ...zeroMetrics });
}

/**
 * Deletes up to `limit` hourly rows of hours before `before` (no window reaches them: the daily
 * rows hold the same figures). Rows the compaction holds are skipped, so this never waits on it;
 * the next run deletes them. Returns how many it deleted.
 */
export async function deleteHoursBefore(sql: Queryable, before: Date, limit: number): Promise<number> {
  let deleted = 0;
  for (const table of [sql`hourly_rollups`, sql`partnership_hourly_rollups`]) {
    const rows = await sql`
      delete from ${table} where ctid in (
        select ctid from ${table} where hour < ${before} limit ${limit} for update skip locked)`;
    deleted += rows.count;
  }
  return deleted;
}

/** Per-day sums over [fromDay, toDay] inclusive, oldest first, every day (zeros when quiet). */
export async function dailySeries(
  sql: Queryable,
  scope: StatsScope,
  fromDay: string,
  toDay: string,
): Promise<(Metrics & { day: string })[]> {
  const figures = figuresOf(sql, scope);
  return sql<(Metrics & { day: string })[]>`
    select to_char(d.day, 'YYYY-MM-DD') as day, coalesce(sum(r.clicks), 0)::int8 as clicks,
           coalesce(sum(r.signups), 0)::int8 as signups, coalesce(sum(r.conversions), 0)::int8 as conversions,
           coalesce(sum(r.revenue_cents), 0) as revenue_cents,
           coalesce(sum(r.commissions_cents), 0) as commissions_cents
    from generate_series(${fromDay}::timestamp, ${toDay}::timestamp, interval '1 day') as d (day)
    left join ${figures.daily} r on ${figures.owner("r")} and r.day = d.day::date
      and r.hour >= d.day at time zone 'UTC' and r.hour < (d.day + interval '1 day') at time zone 'UTC'
    group by d.day order by d.day`;
}

/** The all-time figures of some of a product's partnerships (rollups and unfolded deltas). */
export async function partnershipStats(
  sql: Queryable,
  productId: string,
  partnershipIds: string[],
): Promise<Map<string, PartnershipStats>> {
  const result = new Map<string, PartnershipStats>();
  if (partnershipIds.length === 0) return result;
  const rows = await sql<(PartnershipStats & { partnershipId: string })[]>`
    select partnership_id, sum(clicks)::int8 as clicks, sum(conversions)::int8 as conversions,
           sum(pending_amount_cents + approved_amount_cents + paid_amount_cents) as earned_cents,
           sum(pending_count)::int8 as pending_count, sum(approved_count)::int8 as approved_count,
           sum(pending_amount_cents) as pending_amount_cents, sum(approved_amount_cents) as approved_amount_cents
    from partnership_figures where product_id = ${productId} and partnership_id = any(${partnershipIds}::text[])
    group by partnership_id`;
  for (const { partnershipId, ...stats } of rows) result.set(partnershipId, stats);
  return result;
}
