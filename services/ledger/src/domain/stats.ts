import type { Queryable } from "@affiliate/platform";
import { dailySeries, sumWindows, type WindowPart } from "../store/rollups.js";
import { type Metrics, type Period, zeroMetrics } from "./types.js";

const dayMs = 24 * 3600 * 1000;
export const periodDays: Record<Period, number> = { "7d": 7, "30d": 30, "90d": 90, "12m": 365 };

const isoDay = (at: Date) => at.toISOString().slice(0, 10);
const startOfUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));

/**
 * The parts of the rolling window [from, to): whole UTC days from the daily rollups, the partial
 * days at both edges from the events themselves. Cost: O(days) rollup rows plus at most two days
 * of events, whatever the history's size.
 */
export function windowParts(window: number, from: Date, to: Date): WindowPart[] {
  const firstWholeDay =
    startOfUtcDay(from).getTime() === from.getTime() ? from : new Date(startOfUtcDay(from).getTime() + dayMs);
  const endOfWholeDays = startOfUtcDay(to);
  if (firstWholeDay >= endOfWholeDays) return [{ window, source: "events", from, to }];
  const parts: WindowPart[] = [
    { window, source: "events", from, to: firstWholeDay },
    { window, source: "rollups", from: firstWholeDay, to: endOfWholeDays },
    { window, source: "events", from: endOfWholeDays, to },
  ];
  return parts.filter((part) => part.from < part.to);
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
  const [current = zeroMetrics, previous = zeroMetrics] = await sumWindows(sql, productId, [
    ...windowParts(0, start, new Date(now.getTime() + 1)),
    ...windowParts(1, new Date(start.getTime() - length), start),
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
  const today = startOfUtcDay(now);
  const first = new Date(today.getTime() - (periodDays[period] - 1) * dayMs);
  const days = await dailySeries(sql, productId, isoDay(first), isoDay(today));
  return days.map(({ day, ...metrics }) => ({ date: day, metrics }));
}
