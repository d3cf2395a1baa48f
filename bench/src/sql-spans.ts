/**
 * What the platform's SQL spans cost on a hot path: a tight loop of `select 1` (10 in flight)
 * through a bare postgres.js pool, through the platform's pool outside any trace, and inside a
 * trace with every span recorded and exported (to an exporter that drops them, so the figure is
 * the instrumentation's, not a collector's). Prints CPU and wall time per query; asserts nothing.
 *
 *   node --import tsx bench/src/sql-spans.ts      (from the repository root; BENCH_QUERIES=20000)
 */
import { createSql } from "@affiliate/platform";
import { createTestDatabase } from "@affiliate/testing";
import { trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from "@opentelemetry/sdk-trace";
import postgres from "postgres";

const queries = Number(process.env.BENCH_QUERIES ?? 20_000);
const inFlight = 10;
const rounds = 3;

const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
let ended = 0;
const counting: SpanProcessor = {
  onStart: () => {},
  onEnd: () => {
    ended += 1;
  },
  forceFlush: async () => {},
  shutdown: async () => {},
};
const sdk = new NodeSDK({ spanProcessors: [new BatchSpanProcessor({ exporter: dropping }), counting] });
sdk.start();

const database = await createTestDatabase();
const bare = postgres(database.url, { max: inFlight });
const platform = createSql(database.url, { schema: "public", max: inFlight, applicationName: "bench-sql-spans" });
const tracer = trace.getTracer("bench");

type Run = (query: () => Promise<unknown>) => Promise<void>;
const loop: Run = async (query) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < queries) await query();
    }),
  );
};

const cases: [string, () => Promise<void>][] = [
  ["bare postgres.js", () => loop(() => bare`select 1`)],
  ["platform pool, outside a trace", () => loop(() => platform`select 1`)],
  [
    "platform pool, in a trace (spans exported)",
    () =>
      tracer.startActiveSpan("bench", async (span) => {
        await loop(() => platform`select 1`);
        span.end();
      }),
  ],
];

try {
  for (const [, run] of cases) await run(); // warm-up: connections, JIT
  const results = new Map<string, { cpuUs: number; wallUs: number }[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of cases) {
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      await run();
      const wallUs = Number(process.hrtime.bigint() - started) / 1000 / queries;
      const used = process.cpuUsage(cpu);
      results.set(name, [...(results.get(name) ?? []), { cpuUs: (used.user + used.system) / queries, wallUs }]);
    }
  }
  console.log(
    `${queries} x select 1, ${inFlight} in flight, best of ${rounds} rounds (this process's CPU); ${ended} spans ended`,
  );
  for (const [name, figures] of results) {
    const cpu = Math.min(...figures.map((f) => f.cpuUs));
    const wall = Math.min(...figures.map((f) => f.wallUs));
    console.log(
      `${name.padEnd(44)} ${cpu.toFixed(1).padStart(6)} µs CPU/query ${wall.toFixed(1).padStart(6)} µs wall/query`,
    );
  }
} finally {
  await bare.end();
  await platform.end();
  await database.drop();
  await sdk.shutdown();
}
