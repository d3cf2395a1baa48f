/**
 * Money as the API gives it, integer cents (bigint here), written for a reader without ever
 * turning cents into a floating-point number: Intl formats a bigint exactly, so it is given the
 * whole units and the two digits of cents take its fraction's place.
 */
export function formatCents(cents: bigint, currency: string, locale?: string): string {
  const negative = cents < 0n;
  const magnitude = negative ? -cents : cents;
  const units = magnitude / 100n;
  const fraction = (magnitude % 100n).toString().padStart(2, "0");
  let format: Intl.NumberFormat;
  try {
    format = new Intl.NumberFormat(locale, {
      style: "currency",
      currency: currency.toUpperCase(),
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
    });
  } catch {
    // A currency code Intl does not know is still money: plain digits and the code.
    return `${negative ? "-" : ""}${units}.${fraction} ${currency.toUpperCase()}`;
  }
  // -0.50 has no whole units to carry the sign: format -1 and write 0 where the 1 stands.
  const shown = negative ? (units === 0n ? -1n : -units) : units;
  return format
    .formatToParts(shown)
    .map((part) => {
      if (part.type === "fraction") return fraction;
      if (part.type === "integer" && units === 0n) return "0";
      return part.value;
    })
    .join("");
}

/**
 * Cents as the API gives them: int64 sums arrive as bigint (exact past 2^53), single amounts as
 * numbers, which are safe integers; either way the formatting is done on integers.
 */
export function money(cents: number | bigint, currency: string): string {
  return formatCents(typeof cents === "bigint" ? cents : BigInt(Math.trunc(cents)), currency);
}

/** The direction and size of a change against the previous period, in whole percent. */
export interface Change {
  direction: "up" | "down" | "flat" | "new";
  /** "+12%", "−5%", "no change", "new" (the previous period had none). */
  text: string;
}

/**
 * The change from `previous` to `current`, exact for money as for counts: integer arithmetic,
 * rounded half away from zero to a whole percent.
 */
export function changeAgainst(current: bigint, previous: bigint): Change {
  if (current === previous) return { direction: "flat", text: "no change" };
  if (previous === 0n) return { direction: "new", text: "new" };
  const difference = current - previous;
  const magnitude = difference < 0n ? -difference : difference;
  const base = previous < 0n ? -previous : previous;
  const percent = (magnitude * 200n + base) / (base * 2n);
  if (percent === 0n) return { direction: difference > 0n ? "up" : "down", text: difference > 0n ? "+<1%" : "−<1%" };
  return difference > 0n ? { direction: "up", text: `+${percent}%` } : { direction: "down", text: `−${percent}%` };
}

/** A bar's share of the tallest, in whole units of `scale`, computed on integers. */
export function scaled(value: bigint, max: bigint, scale: number): number {
  if (max <= 0n || value <= 0n) return 0;
  return Number((value * BigInt(scale)) / max);
}
