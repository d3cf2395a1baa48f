import type { Queryable } from "@affiliate/platform";
import { type Metrics, type PartnershipStats, zeroMetrics } from "../domain/types.js";

/** Rollup rows per product-day and per partnership; readers sum them. */
export const shardCount = 16;

/** What one transaction adds to a day's figures: a few events' worth, so plain numbers. */
export type MetricsDelta = { [Figure in keyof Metrics]?: number };

/** The two rollups of product activity: per UTC day, and per UTC hour (a window's edges). */
type ActivityRollup = "daily_rollups" | "hourly_rollups";

/** An insert into a rollup whose row exists already adds its figures to that row. */
const addedToTheRow = (sql: Queryable, table: ActivityRollup) => {
  const period = table === "daily_rollups" ? sql`day` : sql`hour`;
  return sql`
    on conflict (product_id, ${period}, shard) do update set
      clicks = ${sql(table)}.clicks + excluded.clicks,
      signups = ${sql(table)}.signups + excluded.signups,
      conversions = ${sql(table)}.conversions + excluded.conversions,
      revenue_cents = ${sql(table)}.revenue_cents + excluded.revenue_cents,
      commissions_cents = ${sql(table)}.commissions_cents + excluded.commissions_cents`;
};

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
    ${addedToTheRow(sql, "daily_rollups")}`;
}

/** Adds to the product's rollup of one UTC hour (its start, an ISO timestamp) on the given shard. */
export async function addToHourlyRollup(
  sql: Queryable,
  row: { productId: string; hour: string; shard: number },
  delta: Required<MetricsDelta>,
): Promise<void> {
  await sql`
    insert into hourly_rollups (product_id, hour, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
    values (${row.productId}, ${row.hour}::timestamptz, ${row.shard}, ${delta.clicks}, ${delta.signups},
            ${delta.conversions}, ${delta.revenueCents}, ${delta.commissionsCents})
    ${addedToTheRow(sql, "hourly_rollups")}`;
}

/**
 * Adds to one partnership's rollup of a UTC day (`YYYY-MM-DD`) or hour (its start, an ISO
 * timestamp) on the given shard.
 */
export async function addToPartnershipActivityRollup(
  sql: Queryable,
  row: { productId: string; partnershipId: string; period: "day" | "hour"; at: string; shard: number },
  delta: Required<MetricsDelta>,
): Promise<void> {
  const table = row.period === "day" ? sql`partnership_daily_rollups` : sql`partnership_hourly_rollups`;
  const period = row.period === "day" ? sql`day` : sql`hour`;
  const at = row.period === "day" ? sql`${row.at}::date` : sql`${row.at}::timestamptz`;
  await sql`
    insert into ${table} (partnership_id, ${period}, shard, product_id, clicks, signups, conversions, revenue_cents,
                          commissions_cents)
    values (${row.partnershipId}, ${at}, ${row.shard}, ${row.productId}, ${delta.clicks}, ${delta.signups},
            ${delta.conversions}, ${delta.revenueCents}, ${delta.commissionsCents})
    on conflict (partnership_id, ${period}, shard) do update set
      clicks = ${table}.clicks + excluded.clicks,
      signups = ${table}.signups + excluded.signups,
      conversions = ${table}.conversions + excluded.conversions,
      revenue_cents = ${table}.revenue_cents + excluded.revenue_cents,
      commissions_cents = ${table}.commissions_cents + excluded.commissions_cents`;
}

/**
 * Whose figures a stats read sums: the product's (its rollups), or one of its partnerships'
 * (the partnership rollups, filtered by the product too, so another product's id reads zeros).
 */
export type StatsScope = { productId: string; partnershipId?: string | undefined };

/** The rollup tables of a scope, and the filter of its rows (on the table's alias in the query). */
function rollupsOf(sql: Queryable, scope: StatsScope) {
  const { productId, partnershipId } = scope;
  if (partnershipId === undefined) {
    return {
      daily: sql`daily_rollups`,
      hourly: sql`hourly_rollups`,
      owner: (alias: string) => sql`${sql(alias)}.product_id = ${productId}`,
    };
  }
  return {
    daily: sql`partnership_daily_rollups`,
    hourly: sql`partnership_hourly_rollups`,
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

/**
 * A part of a stats window, [from, to): whole UTC days summed from the daily rollups, or whole
 * UTC hours (a partial day at a window's edge) summed from the hourly rollups.
 */
export interface WindowPart {
  window: number;
  source: "days" | "hours";
  from: Date;
  to: Date;
}

/**
 * The metrics of each window (by index, zeros for a window with no activity), summed from its
 * parts in one statement: a stats request is one round trip, whatever the number of parts, and
 * reads rollup rows only (at most a row per shard per day or hour), never an event. Sums of
 * cents stay numeric, which reaches the code as an exact bigint.
 */
export async function sumWindows(sql: Queryable, scope: StatsScope, parts: WindowPart[]): Promise<Metrics[]> {
  const windows = Math.max(0, ...parts.map((part) => part.window + 1));
  if (parts.length === 0) return [];
  const rollups = rollupsOf(sql, scope);
  const rows = await sql<(Metrics & { window: number })[]>`
    with parts (window_index, source, from_at, to_at) as (
      select * from unnest(${parts.map((p) => p.window)}::int[], ${parts.map((p) => p.source)}::text[],
                           ${parts.map((p) => p.from.toISOString())}::timestamptz[],
                           ${parts.map((p) => p.to.toISOString())}::timestamptz[])
    ),
    sums (window_index, clicks, signups, conversions, revenue_cents, commissions_cents) as (
      select p.window_index, d.clicks, d.signups, d.conversions, d.revenue_cents, d.commissions_cents
      from parts p join ${rollups.daily} d on ${rollups.owner("d")}
        and d.day >= (p.from_at at time zone 'UTC')::date and d.day < (p.to_at at time zone 'UTC')::date
      where p.source = 'days'
      union all
      select p.window_index, h.clicks, h.signups, h.conversions, h.revenue_cents, h.commissions_cents
      from parts p join ${rollups.hourly} h on ${rollups.owner("h")} and h.hour >= p.from_at and h.hour < p.to_at
      where p.source = 'hours'
    )
    select window_index as window, sum(clicks)::int8 as clicks, sum(signups)::int8 as signups,
           sum(conversions)::int8 as conversions, sum(revenue_cents) as revenue_cents,
           sum(commissions_cents) as commissions_cents
    from sums group by window_index`;
  const byWindow = new Map(rows.map(({ window, ...metrics }) => [window, metrics]));
  return Array.from({ length: windows }, (_, window) => byWindow.get(window) ?? { ...zeroMetrics });
}

/** Product-days before `beforeDay` that still have rows on shards other than 0, oldest first. */
export async function daysWithShards(
  sql: Queryable,
  beforeDay: string,
  limit: number,
): Promise<{ productId: string; day: string }[]> {
  // In the order of the partial index daily_rollups_unfolded, so a batch reads only its range.
  return sql<{ productId: string; day: string }[]>`
    select product_id, to_char(day, 'YYYY-MM-DD') as day from (
      select distinct day, product_id from daily_rollups
      where day < ${beforeDay}::date and shard <> 0
      order by day, product_id limit ${limit}) unfolded`;
}

/**
 * Folds one product-day's shards into shard 0, in one statement (so in one transaction): a reader
 * sees the day's sum before or after, never half. A writer that adds to a shard row this deletes
 * waits, then inserts the row afresh; its amount is not lost. One day per statement, so the rows
 * this locks are one day's, and no writer (which locks days in order, one shard each) can be part
 * of a cycle with it.
 */
export async function foldShardsOfDay(sql: Queryable, productId: string, day: string): Promise<void> {
  await sql`
    with moved as (
      delete from daily_rollups where product_id = ${productId} and day = ${day}::date and shard <> 0
      returning clicks, signups, conversions, revenue_cents, commissions_cents
    )
    insert into daily_rollups (product_id, day, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
    select ${productId}, ${day}::date, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
           sum(commissions_cents)
    from moved having count(*) > 0
    ${addedToTheRow(sql, "daily_rollups")}`;
}

/** Product-hours before `before` that still have rows on shards other than 0, oldest first. */
export async function hoursWithShards(
  sql: Queryable,
  before: Date,
  limit: number,
): Promise<{ productId: string; hour: Date }[]> {
  // In the order of the partial index hourly_rollups_unfolded, so a batch reads only its range.
  return sql<{ productId: string; hour: Date }[]>`
    select product_id, hour from (
      select distinct hour, product_id from hourly_rollups
      where hour < ${before} and shard <> 0
      order by hour, product_id limit ${limit}) unfolded`;
}

/** Folds one product-hour's shards into shard 0 in one statement, as foldShardsOfDay does a day's. */
export async function foldShardsOfHour(sql: Queryable, productId: string, hour: Date): Promise<void> {
  await sql`
    with moved as (
      delete from hourly_rollups where product_id = ${productId} and hour = ${hour} and shard <> 0
      returning clicks, signups, conversions, revenue_cents, commissions_cents
    )
    insert into hourly_rollups (product_id, hour, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
    select ${productId}, ${hour}, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
           sum(commissions_cents)
    from moved having count(*) > 0
    ${addedToTheRow(sql, "hourly_rollups")}`;
}

/**
 * Deletes up to `limit` hourly rows of hours before `before` (no window reaches them: the daily
 * rows hold the same figures). Rows a writer holds are skipped, so this never waits on one (or in
 * a cycle with one); the next run deletes them. Returns how many it deleted.
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
  const rollups = rollupsOf(sql, scope);
  return sql<(Metrics & { day: string })[]>`
    select to_char(d.day, 'YYYY-MM-DD') as day, coalesce(sum(r.clicks), 0)::int8 as clicks,
           coalesce(sum(r.signups), 0)::int8 as signups, coalesce(sum(r.conversions), 0)::int8 as conversions,
           coalesce(sum(r.revenue_cents), 0) as revenue_cents,
           coalesce(sum(r.commissions_cents), 0) as commissions_cents
    from generate_series(${fromDay}::timestamp, ${toDay}::timestamp, interval '1 day') as d (day)
    left join ${rollups.daily} r on ${rollups.owner("r")} and r.day = d.day::date
    group by d.day order by d.day`;
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
           sum(pending_amount_cents + approved_amount_cents + paid_amount_cents) as earned_cents,
           sum(pending_count)::int8 as pending_count, sum(approved_count)::int8 as approved_count,
           sum(pending_amount_cents) as pending_amount_cents, sum(approved_amount_cents) as approved_amount_cents
    from partnership_rollups where product_id = ${productId} and partnership_id = any(${partnershipIds}::text[])
    group by partnership_id`;
  for (const { partnershipId, ...stats } of rows) result.set(partnershipId, stats);
  return result;
}
