/** Counts, rates, dates and money as the console shows them, in the reader's locale. */
import { formatCents } from "./money.js";

export type Period = "7d" | "30d" | "90d" | "12m";

export const formatCount = (value: number | bigint) => new Intl.NumberFormat().format(value);

/** A rate the API computed (conversions / clicks): not money, so a double is what it is. */
export const formatRate = (rate: number) =>
  new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 1 }).format(rate);

/**
 * Cents as the API gives them: sums arrive as bigint (exact past 2^53), single amounts as
 * numbers, which are integers; either way the formatting is done on integers.
 */
export function money(cents: number | bigint, currency: string): string {
  return formatCents(typeof cents === "bigint" ? cents : BigInt(Math.trunc(cents)), currency);
}

/** Dollars typed by a person ("12.50", "12", "1,200.5") as integer cents, or undefined when not money. */
export function parseCents(text: string): bigint | undefined {
  const match = /^\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?\s*$/.exec(text);
  if (!match) return undefined;
  const units = BigInt((match[1] ?? "0").replaceAll(",", ""));
  const fraction = BigInt((match[2] ?? "").padEnd(2, "0") || "0");
  return units * 100n + fraction;
}

const utcDate = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  timeZone: "UTC",
});
const utcDateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  timeZone: "UTC",
  timeZoneName: "short",
});
const utcDay = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });

/** A timestamp or a `YYYY-MM-DD` date, as a UTC calendar date ("Mar 5, 2026"). */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) return "—";
  const time = Date.parse(iso.length === 10 ? `${iso}T00:00:00Z` : iso);
  return Number.isFinite(time) ? utcDate.format(time) : iso;
}

/** A timestamp to the second, in UTC. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const time = Date.parse(iso);
  return Number.isFinite(time) ? utcDateTime.format(time) : iso;
}

/** A `YYYY-MM-DD` date without its year ("Mar 5"), for the chart's axis. */
export function formatDay(date: string): string {
  const time = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(time) ? utcDay.format(time) : date;
}

export const periods: { value: Period; label: string; previous: string }[] = [
  { value: "7d", label: "7 days", previous: "previous 7 days" },
  { value: "30d", label: "30 days", previous: "previous 30 days" },
  { value: "90d", label: "90 days", previous: "previous 90 days" },
  { value: "12m", label: "12 months", previous: "previous 12 months" },
];

/** A status as a word for people: "mark_paid" -> "Mark paid". */
export const label = (value: string) => {
  const words = value.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
};
