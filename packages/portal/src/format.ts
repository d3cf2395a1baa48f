/** Counts, rates and dates as the page shows them, in the reader's locale. */
import type { Period } from "./api.js";

export const formatCount = (value: number | bigint) => new Intl.NumberFormat().format(value);

/** A rate the API computed (conversions / clicks): not money, so a double is what it is. */
export const formatRate = (rate: number) =>
  new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 }).format(rate);

const utcDate = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  timeZone: "UTC",
});
const utcDay = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });

/** A timestamp or a `YYYY-MM-DD` date, as a UTC calendar date ("Mar 5, 2026"). */
export function formatDate(iso: string): string {
  const time = Date.parse(iso.length === 10 ? `${iso}T00:00:00Z` : iso);
  return Number.isFinite(time) ? utcDate.format(time) : iso;
}

/** A `YYYY-MM-DD` date without its year ("Mar 5"), for the chart's axis. */
export function formatDay(date: string): string {
  const time = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(time) ? utcDay.format(time) : date;
}

interface PeriodText {
  value: Period;
  label: string;
  previous: string;
}

const defaultPeriod: PeriodText = { value: "30d", label: "30 days", previous: "previous 30 days" };

export const periods: PeriodText[] = [
  { value: "7d", label: "7 days", previous: "previous 7 days" },
  defaultPeriod,
  { value: "90d", label: "90 days", previous: "previous 90 days" },
  { value: "12m", label: "12 months", previous: "previous 12 months" },
];

export const periodOf = (value: Period): PeriodText =>
  periods.find((period) => period.value === value) ?? defaultPeriod;
