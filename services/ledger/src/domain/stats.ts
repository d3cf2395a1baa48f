import type { Queryable } from "@affiliate/platform";
import { dailySeries, type StatsScope, sumWindows, type WindowPart } from "../store/rollups.js";
import { type Metrics, type Period, zeroMetrics } from "./types.js";

const hourMs = 3600 * 1000;
const dayMs = 24 * hourMs;
export const periodDays: Record<Period, number> = { "7d": 7, "30d": 30, "90d": 90, "12m": 365 };

/**
 * How far back a stats window reaches: the previous period of a 12-month window starts two years
 * before the current hour ends. Hourly rollups older than this (plus a day's margin) are never
 * read.
 */
export const windowReachDays = 2 * periodDays["12m"] + 1;

const isoDay = (at: Date) => at.toISOString().slice(0, 10);
const startOfUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
const startOfUtcHour = (at: Date) => new Date(Math.floor(at.getTime() / hourMs) * hourMs);

/**
 * The parts of the window [from, to), both whole UTC hours: whole UTC days from the daily
 * figures, the partial days at both edges from the hourly figures. Cost: a rollup row per day and
 * per hour of at most two days, plus the deltas not yet folded, whatever the number of events.
 */
export function windowParts(window: number, from: Date, to: Date): WindowPart[] {
  const firstWholeDay =
    startOfUtcDay(from).getTime() === from.getTime() ? from : new Date(startOfUtcDay(from).getTime() + dayMs);
  const endOfWholeDays = startOfUtcDay(to);
  if (firstWholeDay >= endOfWholeDays) return [{ window, source: "hours", from, to }];
  const parts: WindowPart[] = [
    { window, source: "hours", from, to: firstWholeDay },
    { window, source: "days", from: firstWholeDay, to: endOfWholeDays },
    { window, source: "hours", from: endOfWholeDays, to },
  ];
  return parts.filter((part) => part.from < part.to);
}

/**
 * The current window of a period at `now` (contract 10 and 16): the period's length, ending
 * with the current UTC hour (the whole hour, so its events so far count) and so starting on an
 * hour; the previous window is the equal one before it.
 */
export function statsWindows(period: Period, now: Date): { current: [Date, Date]; previous: [Date, Date] } {
  const length = periodDays[period] * dayMs;
  const end = new Date(startOfUtcHour(now).getTime() + hourMs);
  const start = new Date(end.getTime() - length);
  return { current: [start, end], previous: [new Date(start.getTime() - length), start] };
}

export interface Stats {
  current: Metrics;
  previous: Metrics;
  /** conversions / clicks of the current window; 0 without clicks. */
  conversionRate: number;
}

/**
 * The summary of contract section 10: the window before now and the equal window before it, of
 * the product or (contract 14) of one of its partnerships.
 */
export async function getStats(sql: Queryable, scope: StatsScope, period: Period, now: Date): Promise<Stats> {
  const { current: currentWindow, previous: previousWindow } = statsWindows(period, now);
  const [current = zeroMetrics, previous = zeroMetrics] = await sumWindows(sql, scope, [
    ...windowParts(0, ...currentWindow),
    ...windowParts(1, ...previousWindow),
  ]);
  return { current, previous, conversionRate: current.clicks === 0 ? 0 : current.conversions / current.clicks };
}

/** One point per UTC date, oldest first, ending today; days without activity are zeros. */
export async function getTimeseries(
  sql: Queryable,
  scope: StatsScope,
  period: Period,
  now: Date,
): Promise<{ date: string; metrics: Metrics }[]> {
  const today = startOfUtcDay(now);
  const first = new Date(today.getTime() - (periodDays[period] - 1) * dayMs);
  const days = await dailySeries(sql, scope, isoDay(first), isoDay(today));
  return days.map(({ day, ...metrics }) => ({ date: day, metrics }));
}
