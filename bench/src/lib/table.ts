import type { DatabaseFigures } from "./load.js";

export type Cell = string | number | undefined;

/** "1,234" for counts and large figures, `decimals` for small ones, "n/a" for missing or NaN. */
export function fmt(value: Cell, decimals = 1): string {
  if (value === undefined) return "n/a";
  if (typeof value === "string") return value;
  if (!Number.isFinite(value)) return "n/a";
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  return value.toFixed(decimals);
}

/** "87%" for a ratio, "n/a" when undefined. */
export function pct(value: number): string {
  return Number.isFinite(value) ? `${Math.round(value * 100)}%` : "n/a";
}

/** Prints a titled, aligned table; numeric columns are right-aligned. */
export function printTable(title: string, headers: string[], rows: Cell[][], decimals = 1): void {
  const cells = rows.map((row) => row.map((cell) => fmt(cell, decimals)));
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((row) => (row[i] ?? "").length)));
  const numeric = headers.map((_, i) => rows.every((row) => typeof row[i] === "number" || row[i] === undefined));
  const line = (values: string[]) =>
    values
      .map((value, i) => (numeric[i] ? value.padStart(widths[i] ?? 0) : value.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  console.log(`\n${title}`);
  console.log(line(headers));
  console.log(line(widths.map((width) => "-".repeat(width))));
  for (const row of cells) console.log(line(row));
}

/** A note under a table (targets, ratios, skipped parts). */
export function note(text: string): void {
  console.log(`  ${text}`);
}

/**
 * CPU milliseconds per request of each process group, one row per case: where the time goes.
 * Groups that spent nothing on any case are left out.
 */
export function printCpuTable(
  title: string,
  cases: [string, { cpuMsPerRequest: Record<string, number>; coresBusy: number; database?: DatabaseFigures }][],
): void {
  const labels = [...new Set(cases.flatMap(([, r]) => Object.keys(r.cpuMsPerRequest)))].filter((label) =>
    cases.some(([, r]) => (r.cpuMsPerRequest[label] ?? 0) > 0.005),
  );
  const withDatabase = cases.some(([, r]) => r.database);
  printTable(
    title,
    [
      "case",
      ...labels,
      "total",
      "cores busy",
      ...(withDatabase ? ["db active (avg)", "waiting on locks", "top wait", "deadlocks"] : []),
    ],
    cases.map(([name, r]) => [
      name,
      ...labels.map((label) => r.cpuMsPerRequest[label] ?? 0),
      Object.values(r.cpuMsPerRequest).reduce((sum, ms) => sum + ms, 0),
      r.coresBusy,
      ...(withDatabase
        ? [r.database?.active, r.database?.lockWaits, r.database?.topWait ?? "-", r.database?.deadlocks]
        : []),
    ]),
    2,
  );
}
