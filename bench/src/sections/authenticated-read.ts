import { startChildServer } from "../lib/child-server.js";
import type { BenchContext } from "../lib/context.js";
import { ratio } from "../lib/latency.js";
import { compareLoads, describeNon2xx, type LoadResult } from "../lib/load.js";
import { note, pct, printCpuTable, printTable } from "../lib/table.js";

export interface AuthenticatedReadResult {
  connections: number;
  durationS: number;
  rounds: number;
  program: LoadResult;
  trivialRpc: LoadResult;
  /** program req/s over the trivial-RPC route's; target >= 0.6. */
  ratio: number;
}

const target = 0.6;
const names = {
  program: "gateway GET /api/v1/program (key + GetProgram RPC)",
  trivialRpc: "fastify route -> Health/Check RPC (reference)",
};

/**
 * B. What the gateway adds on top of one RPC hop. GET /api/v1/program is a cached key lookup
 * plus one GetProgram RPC; the reference is a bare Fastify route making one Health/Check RPC to
 * the same partners process (which runs `select 1` for it, as GetProgram runs its select), with
 * the same OpenTelemetry instrumentation loaded. Both run against this run's mesh, alternating.
 */
export async function authenticatedRead(ctx: BenchContext): Promise<AuthenticatedReadResult> {
  const { config, mesh } = ctx;
  const product = await ctx.createProduct("bench authenticated read");
  const headers = { "x-api-key": product.liveKey };
  // Resolve the key once, so the measured run starts with the key cache warm.
  await ctx.gateway.json("/api/v1/program", { headers });

  const trivial = await startChildServer("trivial-rpc-server.ts", { PARTNERS_URL: mesh.urls.partners ?? "" });
  ctx.onTeardown(trivial.stop);
  let loads: Record<string, LoadResult>;
  try {
    loads = await compareLoads(
      [
        { name: names.trivialRpc, url: `${trivial.url}/rpc` },
        { name: names.program, url: `${mesh.gatewayUrl}/api/v1/program`, headers },
      ],
      {
        connections: config.connections,
        durationS: config.durationS,
        rounds: config.rounds,
        warmupS: config.warmupS,
        processes: ctx.processes({ reference: trivial.pid }),
        database: ctx.database,
      },
    );
  } finally {
    await trivial.stop();
  }
  const program = loads[names.program] as LoadResult;
  const trivialRpc = loads[names.trivialRpc] as LoadResult;

  const rows = [
    [names.program, program],
    [names.trivialRpc, trivialRpc],
  ] as const;
  printTable(
    `B. Authenticated read vs trivial RPC: ${config.connections} connections, ${config.durationS} s each (${config.rounds} alternating rounds)`,
    ["case", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors"],
    rows.map(([name, r]) => [name, r.requestsPerSecond, r.p50Ms, r.p99Ms, describeNon2xx(r), r.errors + r.timeouts]),
  );
  const value = ratio(program.requestsPerSecond, trivialRpc.requestsPerSecond);
  note(`program / trivial RPC = ${pct(value)} (target >= ${pct(target)}): ${value >= target ? "met" : "MISSED"}`);
  printCpuTable(
    "B. CPU ms per request by process",
    rows.map(([name, r]) => [name, r]),
  );
  return {
    connections: config.connections,
    durationS: config.durationS,
    rounds: config.rounds,
    program,
    trivialRpc,
    ratio: value,
  };
}
