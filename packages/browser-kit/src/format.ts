/** Counts, rates, dates and reporting periods as the apps show them, in the reader's locale. */

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

/** A timestamp or a `YYYY-MM-DD` date, as a UTC calendar date ("Mar 5, 2026"); "—" when there is none. */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) return "—";
  const time = Date.parse(iso.length === 10 ? `${iso}T00:00:00Z` : iso);
  return Number.isFinite(time) ? utcDate.format(time) : iso;
}

/** A `YYYY-MM-DD` date without its year ("Mar 5"), for the chart's axis. */
export function formatDay(date: string): string {
  const time = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(time) ? utcDay.format(time) : date;
}

/** The periods the API's figures cover (`?period=`), with how a reader names each and the one before. */
export const periods = [
  { value: "7d", label: "7 days", previous: "previous 7 days" },
  { value: "30d", label: "30 days", previous: "previous 30 days" },
  { value: "90d", label: "90 days", previous: "previous 90 days" },
  { value: "12m", label: "12 months", previous: "previous 12 months" },
] as const satisfies readonly { value: string; label: string; previous: string }[];

export type Period = (typeof periods)[number]["value"];
export type PeriodText = (typeof periods)[number];

/** How a reader names `value` and the period before it; 30 days for a value the list lacks. */
export const periodOf = (value: Period): PeriodText => periods.find((period) => period.value === value) ?? periods[1];

/** A status or an action as a word for people: "mark_paid" -> "Mark paid". */
export const label = (value: string) => {
  const words = value.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
};
