import type { Queryable } from "@affiliate/platform";
import { dailySeries, sumDailyRollups, sumEvents } from "../store/rollups.js";
import type { Metrics, Period } from "./types.js";

const dayMs = 24 * 3600 * 1000;
export const periodDays: Record<Period, number> = { "7d": 7, "30d": 30, "90d": 90, "12m": 365 };

const isoDay = (at: Date) => at.toISOString().slice(0, 10);
const startOfUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));

function add(a: Metrics, b: Metrics): Metrics {
  return {
    clicks: a.clicks + b.clicks,
    signups: a.signups + b.signups,
    conversions: a.conversions + b.conversions,
    revenueCents: a.revenueCents + b.revenueCents,
    commissionsCents: a.commissionsCents + b.commissionsCents,
  };
}

/**
 * Metrics of the rolling window [from, to): whole UTC days from the daily rollups, the partial
 * days at both edges from the events themselves. Cost: O(days) rollup rows plus at most two
 * days of events, whatever the history's size.
 */
export async function metricsBetween(sql: Queryable, productId: string, from: Date, to: Date): Promise<Metrics> {
  const firstWholeDay =
    startOfUtcDay(from).getTime() === from.getTime() ? from : new Date(startOfUtcDay(from).getTime() + dayMs);
  const endOfWholeDays = startOfUtcDay(to);
  if (firstWholeDay >= endOfWholeDays) return sumEvents(sql, productId, from, to);
  const [head, body, tail] = await Promise.all([
    sumEvents(sql, productId, from, firstWholeDay),
    sumDailyRollups(sql, productId, isoDay(firstWholeDay), isoDay(endOfWholeDays)),
    sumEvents(sql, productId, endOfWholeDays, to),
  ]);
  return add(add(head, body), tail);
}

export interface Stats {
  current: Metrics;
  previous: Metrics;
  /** conversions / clicks of the current window; 0 without clicks. */
  conversionRate: number;
}

/** The summary of contract section 10: the window before now and the equal window before it. */
export async function getStats(sql: Queryable, productId: string, period: Period, now: Date): Promise<Stats> {
  const length = periodDays[period] * dayMs;
  const start = new Date(now.getTime() - length);
  // The current window is [now − length, now]: an event at this very millisecond counts.
  const [current, previous] = await Promise.all([
    metricsBetween(sql, productId, start, new Date(now.getTime() + 1)),
    metricsBetween(sql, productId, new Date(start.getTime() - length), start),
  ]);
  return { current, previous, conversionRate: current.clicks === 0 ? 0 : current.conversions / current.clicks };
}

/** One point per UTC date, oldest first, ending today; days without activity are zeros. */
export async function getTimeseries(
  sql: Queryable,
  productId: string,
  period: Period,
  now: Date,
): Promise<{ date: string; metrics: Metrics }[]> {
  const days = periodDays[period];
  const today = startOfUtcDay(now);
  const first = new Date(today.getTime() - (days - 1) * dayMs);
  const rows = new Map((await dailySeries(sql, productId, isoDay(first), isoDay(today))).map((row) => [row.day, row]));
  return Array.from({ length: days }, (_, i) => {
    const date = isoDay(new Date(first.getTime() + i * dayMs));
    const row = rows.get(date);
    return {
      date,
      metrics: {
        clicks: row?.clicks ?? 0,
        signups: row?.signups ?? 0,
        conversions: row?.conversions ?? 0,
        revenueCents: row?.revenueCents ?? 0,
        commissionsCents: row?.commissionsCents ?? 0,
      },
    };
  });
}
