import { loadavg } from "node:os";
import { compareWithInsertReference } from "../lib/child-server.js";
import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { ratio } from "../lib/latency.js";
import { describeNon2xx, type LoadCase, type LoadResult } from "../lib/load.js";
import { type EventTotals, seedEvents, seedPartnerships } from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

export type ReadCase = "insert" | "list" | "stats";

export type ReadsVsInsertResult =
  | { skipped: string }
  | {
      connections: number;
      durationS: number;
      rounds: number;
      partnerships: number;
      totals: EventTotals;
      seedSeconds: number;
      /** What GET /api/v1/stats?period=12m answered for clicks: it should equal totals.clicks. */
      apiClicks: number;
      loads: Partial<Record<ReadCase, LoadResult>>;
      listOverInsert?: number;
      statsOverInsert?: number;
    };

const targets = { list: 0.1, stats: 0.04 };
const paths = { list: "/api/v1/affiliates?limit=50", stats: "/api/v1/stats?period=12m" };
const scratchTable = "bench_scratch_reads";
const names: Record<ReadCase, string> = {
  insert: "fastify route -> one INSERT, pool 10 (reference)",
  list: `GET ${paths.list} (page 1)`,
  stats: `GET ${paths.stats}`,
};

/**
 * R. The two reads a dashboard polls, side by side in one run with the floor of one INSERT per
 * request in one process (E's reference server): the affiliate list's first page (partners, then
 * the ledger's figures for its 50 partnerships) and the 12-month summary (the ledger's window
 * sums, partners' active count), over one product with `BENCH_READ_PARTNERSHIPS` partnerships
 * and `BENCH_READ_EVENTS` events spread over them and the last 12 months, rollups as the ledger
 * keeps them (deltas folded). Same connections for every case.
 */
export async function readsVsInsert(ctx: BenchContext): Promise<ReadsVsInsertResult> {
  const { config, gateway, mesh, sql } = ctx;
  const product = await ctx.createProduct("bench reads");
  const headers = { "x-api-key": product.liveKey };
  if (!(await gatewayHasRoute(gateway, "GET", paths.stats, product.liveKey))) {
    const skipped = `GET ${paths.stats.split("?")[0]} not available`;
    console.log(`\nR. Reads vs the INSERT reference\n  skipped: ${skipped}`);
    return { skipped };
  }

  const started = performance.now();
  const partnerships = await seedPartnerships(sql, product.productId, config.readPartnerships, "reads");
  // Plus F's busy day (BENCH_EVENTS_TODAY since midnight): today's events are what stats once scanned.
  const totals = await seedEvents(sql, product.productId, partnerships, config.readEvents, {
    today: config.eventsToday,
  });
  // As F does: a long-lived database has had its bulk-load leftovers vacuumed and checkpointed.
  for (const table of ["tracking_events", "commissions", "daily_rollups", "hourly_rollups", "partnership_rollups"]) {
    await sql.unsafe(`vacuum (analyze) ledger.${table}`);
  }
  await sql`checkpoint`;
  const seedSeconds = (performance.now() - started) / 1000;
  console.log(
    `  seeded ${fmt(config.readPartnerships)} partnerships and ${fmt(config.readEvents)} events (+${fmt(config.eventsToday)} today) in ${seedSeconds.toFixed(1)} s`,
  );
  const summary = await gateway.json<{ data: { clicks: number } }>(paths.stats, { headers });
  const apiClicks = summary.data.clicks;

  let sequence = 0;
  const stamp = Date.now().toString(36);
  const loads = await compareWithInsertReference(ctx, scratchTable, (referenceUrl) => {
    const cases: Record<ReadCase, LoadCase> = {
      insert: {
        name: names.insert,
        url: referenceUrl,
        method: "POST",
        body: () => ({
          type: "payment",
          referral_code: "reads-0",
          amount_cents: 10_000,
          external_id: `r-${stamp}-${sequence++}`,
        }),
      },
      list: { name: names.list, url: mesh.gatewayUrl + paths.list, headers },
      stats: { name: names.stats, url: mesh.gatewayUrl + paths.stats, headers },
    };
    return config.readCases.map((name) => cases[name]);
  });
  const selected = config.readCases;
  const byCase: Partial<Record<ReadCase, LoadResult>> = {};
  for (const name of selected) byCase[name] = loads[names[name]];
  const reference = byCase.insert;
  const overInsert = (r: LoadResult | undefined) =>
    r && reference ? ratio(r.requestsPerSecond, reference.requestsPerSecond) : undefined;
  const listOverInsert = overInsert(byCase.list);
  const statsOverInsert = overInsert(byCase.stats);

  printTable(
    `R. Reads vs the INSERT reference: ${config.connections} connections, ${config.durationS} s each (${config.rounds} alternating rounds); ${fmt(config.readPartnerships)} partnerships, ${fmt(config.readEvents)} events over 12 months`,
    ["case", "req/s", "vs INSERT route", "p50 ms", "p99 ms", "non-2xx", "errors"],
    selected.map((name) => {
      const r = byCase[name] as LoadResult;
      const over = overInsert(r);
      return [
        names[name],
        r.requestsPerSecond,
        over === undefined ? "n/a" : `${fmt(over, 3)}x`,
        r.p50Ms,
        r.p99Ms,
        describeNon2xx(r),
        r.errors + r.timeouts,
      ];
    }),
  );
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  if (listOverInsert !== undefined) {
    note(
      `list page 1 ${fmt(listOverInsert, 3)}x the INSERT route (target >= ${targets.list}x): ${verdict(listOverInsert >= targets.list)}`,
    );
  }
  if (statsOverInsert !== undefined) {
    note(
      `12-month stats ${fmt(statsOverInsert, 3)}x the INSERT route (target >= ${targets.stats}x): ${verdict(statsOverInsert >= targets.stats)}`,
    );
  }
  note(`API 12m clicks ${fmt(apiClicks)}, seeded ${fmt(totals.clicks)}`);
  printCpuTable(
    `R. CPU ms per request by process (${config.connections} connections)`,
    selected.map((name) => [names[name], byCase[name] as LoadResult]),
  );
  note(
    `machine load average (1, 5, 15 min) at the end: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(", ")}`,
  );
  return {
    connections: config.connections,
    durationS: config.durationS,
    rounds: config.rounds,
    partnerships: config.readPartnerships,
    totals,
    seedSeconds,
    apiClicks,
    loads: byCase,
    ...(listOverInsert === undefined ? {} : { listOverInsert }),
    ...(statsOverInsert === undefined ? {} : { statsOverInsert }),
  };
}
