/**
 * What only the console writes and reads: amounts typed by a person and timestamps to the
 * second. Counts, dates, periods, statuses and money shown are @affiliate/browser-kit's.
 */

/** Dollars typed by a person ("12.50", "12", "1,200.5") as integer cents, or undefined when not money. */
export function parseCents(text: string): bigint | undefined {
  const match = /^\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?\s*$/.exec(text);
  if (!match) return undefined;
  const units = BigInt((match[1] ?? "0").replaceAll(",", ""));
  const fraction = BigInt((match[2] ?? "").padEnd(2, "0") || "0");
  return units * 100n + fraction;
}

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

/** A timestamp to the second, in UTC. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const time = Date.parse(iso);
  return Number.isFinite(time) ? utcDateTime.format(time) : iso;
}
