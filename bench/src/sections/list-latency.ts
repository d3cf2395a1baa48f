import type { BenchContext } from "../lib/context.js";
import { interleavedLatencies } from "../lib/http.js";
import { type LatencySummary, ratio, summarize } from "../lib/latency.js";
import { compareLoads, describeNon2xx, type LoadResult } from "../lib/load.js";
import { seedPartnerships } from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

interface ListPage {
  data: unknown[];
  pagination: { next_cursor: string | null; has_more: boolean };
}

interface PageFigures {
  sequential: LatencySummary;
  non2xx: number;
  load?: LoadResult;
}

export interface ListLatencyResult {
  partnerships: number;
  seedSeconds: number;
  deepPage: number;
  deepRows: number;
  walkSeconds: number;
  page1: PageFigures;
  deep: PageFigures;
  deepOverPage1P50: number;
  deepOverPage1P99: number;
}

const listPath = "/api/v1/affiliates?limit=50";
const loadConnections = 10;

/**
 * A. Does listing cost the same on page 1 and 1,000 pages deep? Partnerships page on
 * (product_id, id desc) with the last id in the cursor, so a deep page should be one index
 * range scan like the first; an OFFSET-style plan would grow with depth.
 */
export async function listLatency(ctx: BenchContext): Promise<ListLatencyResult> {
  const { config, gateway, sql } = ctx;
  const product = await ctx.createProduct("bench list latency");
  const headers = { "x-api-key": product.liveKey };

  const seedStarted = performance.now();
  await seedPartnerships(sql, product.productId, config.partnerships, "list");
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  console.log(`  seeded ${fmt(config.partnerships)} partnerships in ${seedSeconds.toFixed(1)} s`);

  // Walk the cursor once to reach the deep page; each hop is a real client's next-page request.
  const walkStarted = performance.now();
  let deepPath = listPath;
  let deepPage = 1;
  while (deepPage < config.pageDepth) {
    const page = await gateway.json<ListPage>(deepPath, { headers });
    if (!page.pagination.next_cursor) break;
    deepPath = `${listPath}&cursor=${encodeURIComponent(page.pagination.next_cursor)}`;
    deepPage++;
  }
  const walkSeconds = (performance.now() - walkStarted) / 1000;
  const deepRows = (await gateway.json<ListPage>(deepPath, { headers })).data.length;
  const msPerPage = (walkSeconds * 1000) / Math.max(1, deepPage - 1);
  console.log(
    `  walked to page ${fmt(deepPage)} in ${walkSeconds.toFixed(1)} s (${msPerPage.toFixed(1)} ms/page); it holds ${deepRows} rows`,
  );

  const timed = await interleavedLatencies(
    gateway,
    [
      { name: "page1", path: listPath, options: { headers } },
      { name: "deep", path: deepPath, options: { headers } },
    ],
    config.samples,
  );
  const page1: PageFigures = { sequential: summarize(timed.page1?.ms ?? []), non2xx: timed.page1?.non2xx ?? 0 };
  const deep: PageFigures = { sequential: summarize(timed.deep?.ms ?? []), non2xx: timed.deep?.non2xx ?? 0 };

  if (config.listDurationS > 0) {
    const loads = await compareLoads(
      [
        { name: "page1", url: ctx.mesh.gatewayUrl + listPath, headers },
        { name: "deep", url: ctx.mesh.gatewayUrl + deepPath, headers },
      ],
      {
        connections: loadConnections,
        durationS: config.listDurationS,
        rounds: config.rounds,
        warmupS: config.warmupS,
        processes: ctx.processes(),
        database: ctx.database,
      },
    );
    if (loads.page1) page1.load = loads.page1;
    if (loads.deep) deep.load = loads.deep;
  }

  const row = (name: string, figures: PageFigures) => [
    name,
    figures.sequential.p50,
    figures.sequential.p99,
    figures.sequential.max,
    figures.non2xx,
    figures.load?.requestsPerSecond,
    figures.load?.p50Ms,
    figures.load?.p99Ms,
    figures.load ? describeNon2xx(figures.load) : undefined,
  ];
  printTable(
    `A. List latency: GET ${listPath}, ${fmt(config.partnerships)} partnerships in one product`,
    [
      "page",
      `p50 ms (${config.samples} seq)`,
      "p99 ms",
      "max ms",
      "non-2xx",
      `req/s (${loadConnections} conns, ${config.listDurationS} s)`,
      "p50 ms",
      "p99 ms",
      "non-2xx",
    ],
    [row("1", page1), row(fmt(deepPage), deep)],
  );
  const deepOverPage1P50 = ratio(deep.sequential.p50, page1.sequential.p50);
  const deepOverPage1P99 = ratio(deep.sequential.p99, page1.sequential.p99);
  const loadRatio =
    page1.load && deep.load
      ? `, req/s ${fmt(ratio(deep.load.requestsPerSecond, page1.load.requestsPerSecond), 2)}x`
      : "";
  note(`deep/page1: p50 ${fmt(deepOverPage1P50, 2)}x, p99 ${fmt(deepOverPage1P99, 2)}x${loadRatio}`);
  if (page1.load && deep.load) {
    printCpuTable(`A. CPU ms per request by process (${loadConnections} connections)`, [
      ["page 1", page1.load],
      [`page ${fmt(deepPage)}`, deep.load],
    ]);
  }

  return {
    partnerships: config.partnerships,
    seedSeconds,
    deepPage,
    deepRows,
    walkSeconds,
    page1,
    deep,
    deepOverPage1P50,
    deepOverPage1P99,
  };
}
