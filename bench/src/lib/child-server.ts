import { spawn } from "node:child_process";
import http from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchContext } from "./context.js";
import { compareLoads, type LoadCase, type LoadResult } from "./load.js";
import { freePort } from "./ports.js";

/** bench/ (this file is bench/src/lib/child-server.ts). */
const benchDirectory = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface ChildServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function healthy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/healthz", timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

/**
 * Starts one of the bench's reference servers (bench/src/<script>) as its own process, loaded
 * the way the mesh loads a service (`--import @affiliate/platform/instrumentation`), so the
 * comparison carries the same OpenTelemetry cost; tsx only adds load time, not per-request work.
 */
export async function startChildServer(script: string, env: Record<string, string>): Promise<ChildServer> {
  const port = await freePort();
  const lines: string[] = [];
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--import", "@affiliate/platform/instrumentation", join("src", script)],
    {
      cwd: benchDirectory,
      env: { ...process.env, OTEL_SERVICE_NAME: script.replace(/\.ts$/, ""), ...env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  for (const stream of [child.stdout, child.stderr]) {
    stream.on("data", (chunk: Buffer) => {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      lines.splice(0, Math.max(0, lines.length - 50));
    });
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await gone;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 30_000;
  while (!(await healthy(port))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${script} did not start:\n${lines.join("\n")}`);
    }
    await sleep(100);
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid ?? 0, stop };
}

/**
 * Runs the cases `casesFor` builds beside the reference route of sections E and R
 * (`src/insert-server.ts`: a Fastify route doing one postgres.js INSERT per request into
 * `scratchTable` of the run's database, which it creates), under the run's load options, its
 * CPU metered as "reference". `casesFor` gets the reference's `POST` URL; the reference runs
 * only for these loads.
 */
export async function compareWithInsertReference(
  ctx: BenchContext,
  scratchTable: string,
  casesFor: (referenceUrl: string) => LoadCase[],
): Promise<Record<string, LoadResult>> {
  const { config } = ctx;
  await ctx.sql.unsafe(`create table if not exists ${scratchTable} (
    id text primary key,
    event_type text not null,
    referral_code text,
    amount_cents bigint,
    external_id text,
    created_at timestamptz not null default now()
  )`);
  const server = await startChildServer("insert-server.ts", {
    DATABASE_URL: ctx.databaseUrl,
    SCRATCH_TABLE: scratchTable,
  });
  ctx.onTeardown(server.stop);
  try {
    return await compareLoads(casesFor(`${server.url}/events`), {
      connections: config.connections,
      durationS: config.durationS,
      rounds: config.rounds,
      warmupS: config.warmupS,
      processes: ctx.processes({ reference: server.pid }),
      database: ctx.database,
    });
  } finally {
    await server.stop();
  }
}
