import { compactDailyRollups } from "@affiliate/ledger/dist/domain/compact-rollups.js";
import { createSql } from "@affiliate/platform";
import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { interleavedLatencies, meteredRequests } from "../lib/http.js";
import { type LatencySummary, ratio, summarize } from "../lib/latency.js";
import { type EventTotals, seedEvents, seedPartnerships } from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

interface Measured {
  events: number;
  seedSeconds: number;
  totals: EventTotals;
  /** What GET /api/v1/stats?period=12m answered for clicks: it should equal totals.clicks. */
  apiClicks: number | undefined;
  stats: LatencySummary & { non2xx: number };
  timeseries: LatencySummary & { non2xx: number };
  /** CPU per request by process, from a separate metered pass per route. */
  cpu: Record<"stats" | "timeseries", { cpuMsPerRequest: Record<string, number>; coresBusy: number }>;
}

export type StatsLatencyResult =
  | { skipped: string }
  | { large: Measured; small: Measured; largeOverSmallP99: { stats: number; timeseries: number } };

const targetP99Ms = 30;
const paths = { stats: "/api/v1/stats?period=12m", timeseries: "/api/v1/stats/timeseries?period=12m" };
/** Requests per metered pass: enough for 10 ms clock ticks to average out. */
const cpuSamples = 50;
/** Partnerships the seeded events are attributed to (round-robin). */
const partnershipsPerProduct = 50;

async function seedProduct(ctx: BenchContext, label: string, events: number) {
  const product = await ctx.createProduct(`bench stats ${label}`);
  const started = performance.now();
  const partnerships = await seedPartnerships(ctx.sql, product.productId, partnershipsPerProduct, `stats-${label}`);
  const totals = await seedEvents(ctx.sql, product.productId, partnerships, events);
  const seedSeconds = (performance.now() - started) / 1000;
  console.log(`  seeded ${fmt(events)} events (${label}) in ${seedSeconds.toFixed(1)} s`);
  return { product, totals, seedSeconds };
}

type Seeded = Awaited<ReturnType<typeof seedProduct>>;

/**
 * Times both routes for both products, alternating request by request (large stats, small
 * stats, large series, small series, …): whatever else loads the machine meanwhile weighs on
 * both products alike, so their ratio is the products' difference, not the moment's.
 */
async function measureBoth(ctx: BenchContext, large: Seeded, small: Seeded): Promise<[Measured, Measured]> {
  const targets = [large, small].flatMap((seeded, i) =>
    (["stats", "timeseries"] as const).map((route) => ({
      name: `${i}/${route}`,
      path: paths[route],
      options: { headers: { "x-api-key": seeded.product.liveKey } },
    })),
  );
  const timed = await interleavedLatencies(ctx.gateway, targets, ctx.config.samples);
  const figures = async (seeded: Seeded, i: number): Promise<Measured> => {
    const headers = { "x-api-key": seeded.product.liveKey };
    const summary = await ctx.gateway.json<{ data: { clicks: number } }>(paths.stats, { headers });
    const of = (route: string) => {
      const result = timed[`${i}/${route}`] ?? { ms: [], non2xx: 0 };
      return { ...summarize(result.ms), non2xx: result.non2xx };
    };
    const cpuOf = (route: "stats" | "timeseries") =>
      meteredRequests(
        ctx.gateway,
        { name: route, path: paths[route], options: { headers } },
        cpuSamples,
        ctx.processes(),
      );
    return {
      events: seeded.totals.events,
      seedSeconds: seeded.seedSeconds,
      totals: seeded.totals,
      apiClicks: summary.data.clicks,
      stats: of("stats"),
      timeseries: of("timeseries"),
      cpu: { stats: await cpuOf("stats"), timeseries: await cpuOf("timeseries") },
    };
  };
  return [await figures(large, 0), await figures(small, 1)];
}

/**
 * F. Stats must cost O(days), not O(events): whole days come from daily_rollups, only the two
 * partial edge days from the events. A product with 1,000,000 events should answer as fast as
 * one with 10,000. Both are seeded in bulk with rollups matching their events exactly.
 */
export async function statsLatency(ctx: BenchContext): Promise<StatsLatencyResult> {
  const { config, gateway } = ctx;
  const probe = await ctx.createProduct("bench stats probe");
  const missing = [];
  for (const path of Object.values(paths)) {
    if (!(await gatewayHasRoute(gateway, "GET", path, probe.liveKey))) missing.push(`GET ${path.split("?")[0]}`);
  }
  if (missing.length > 0) {
    const skipped = `${missing.join(", ")} not available`;
    console.log(`\nF. Stats latency\n  skipped: ${skipped}`);
    return { skipped };
  }

  const largeSeeded = await seedProduct(ctx, "large", config.events);
  const smallSeeded = await seedProduct(ctx, "small", config.smallEvents);
  // The ledger folds old days' rollup shards into one row each every hour; a long-lived database
  // has had that done for all but the last two days.
  const ledgerSql = createSql(ctx.databaseUrl, { schema: "ledger", applicationName: "bench-compaction", max: 1 });
  try {
    const folded = await compactDailyRollups(ledgerSql, new Date());
    console.log(`  folded the rollup shards of ${fmt(folded)} product-days, as the ledger's hourly job does`);
  } finally {
    await ledgerSql.end();
  }
  // A bulk load leaves work behind (hint bits, visibility map, dirty buffers) that autovacuum and
  // the checkpointer would do during the measurement; a long-lived database has done it already.
  for (const table of ["tracking_events", "commissions", "daily_rollups"]) {
    await ctx.sql.unsafe(`vacuum (analyze) ledger.${table}`);
  }
  await ctx.sql`checkpoint`;
  const [large, small] = await measureBoth(ctx, largeSeeded, smallSeeded);

  const rows = [large, small].flatMap((m) =>
    (["stats", "timeseries"] as const).map((name) => [
      fmt(m.events),
      `GET ${paths[name]}`,
      m[name].p50,
      m[name].p99,
      m[name].max,
      m[name].non2xx,
    ]),
  );
  printTable(
    `F. Stats latency: ${config.samples} sequential requests each, the four URLs alternating`,
    ["events", "route", "p50 ms", "p99 ms", "max ms", "non-2xx"],
    rows,
  );
  const largeOverSmallP99 = {
    stats: ratio(large.stats.p99, small.stats.p99),
    timeseries: ratio(large.timeseries.p99, small.timeseries.p99),
  };
  const worstP99 = Math.max(large.stats.p99, large.timeseries.p99, small.stats.p99, small.timeseries.p99);
  note(`worst p99 ${fmt(worstP99)} ms (target < ${targetP99Ms} ms): ${worstP99 < targetP99Ms ? "met" : "MISSED"}`);
  note(
    `${fmt(large.events)} / ${fmt(small.events)} events, p99: stats ${fmt(largeOverSmallP99.stats, 2)}x, timeseries ${fmt(largeOverSmallP99.timeseries, 2)}x (target: no slower)`,
  );
  for (const m of [large, small]) {
    note(`${fmt(m.events)} events: API 12m clicks ${fmt(m.apiClicks)}, seeded ${fmt(m.totals.clicks)}`);
  }
  printCpuTable(
    `F. CPU ms per request by process (${cpuSamples} sequential requests per route)`,
    [large, small].flatMap((m) =>
      (["stats", "timeseries"] as const).map((route): [string, (typeof m.cpu)[typeof route]] => [
        `${fmt(m.events)} ${route}`,
        m.cpu[route],
      ]),
    ),
  );
  return { large, small, largeOverSmallP99 };
}
