import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Sql } from "./db.js";
import type { Logger } from "./logger.js";

/**
 * Prometheus metrics of the process, served on its own METRICS_PORT (never the public port).
 *
 * prom-client rather than OpenTelemetry's Prometheus exporter: it is the Prometheus data model
 * itself (counters, histograms with `le` buckets, scrape-time collection), stable across Node 20
 * and 24, and independent of the OpenTelemetry SDK, whose 0.x releases move with every upgrade of
 * the runtime. Traces stay with OpenTelemetry.
 *
 * One registry per process. Every mechanism of the platform registers its own families here (the
 * RPC server and client, the outbox relay, the consumers, the pool), so a service gets them by
 * starting those mechanisms and calling startMetricsServer once.
 */
export const metricsRegistry = new Registry();

// process_* and nodejs_* families, event-loop lag among them (nodejs_eventloop_lag_seconds, its
// p50/p90/p99), measured with perf_hooks at 10 ms resolution.
collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: 10 });

/** Seconds: from a cache hit (~1 ms) to a deadline (5 s) and beyond. */
const durationBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const registers = [metricsRegistry];

// --- Scrape-time samples ---------------------------------------------------------------------

/** Reads a value when Prometheus scrapes (a queue depth, a consumer's pending count) and sets gauges. */
export type Sampler = () => Promise<void> | void;

const samplers = new Set<{ name: string; sample: Sampler }>();
const samplerFailures = new Counter({
  name: "metrics_sampler_failures_total",
  help: "Scrapes at which a sampler failed or timed out; its gauges then keep their previous value.",
  labelNames: ["sampler"],
  registers,
});
/** A scrape must answer even when a sampled dependency hangs. */
const samplerTimeoutMs = 2000;

/**
 * Registers `sample` to run before every scrape, so gauges that read a table or a broker are fresh
 * without a timer of their own (the outbox, the consumers and the pool use it; so will the
 * notifier's delivery queue). `name` labels its failures. Returns the unregistration.
 */
export function sampleOnScrape(name: string, sample: Sampler): () => void {
  const entry = { name, sample };
  samplers.add(entry);
  return () => {
    samplers.delete(entry);
  };
}

async function runSamplers(): Promise<void> {
  await Promise.all(
    [...samplers].map(async ({ name, sample }) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out")), samplerTimeoutMs);
      });
      try {
        await Promise.race([Promise.resolve().then(sample), timeout]);
      } catch {
        samplerFailures.inc({ sampler: name });
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/** The text exposition of every family, samplers run first. */
export async function collectMetrics(): Promise<string> {
  await runSamplers();
  return metricsRegistry.metrics();
}

// --- A service's own families ------------------------------------------------------------------

/**
 * A counter of a service's own (the notifier's webhook attempts, the integrations' provider
 * events, by outcome), on the process's registry, so it is served with the platform's families.
 * Each label set in `initial` starts at 0, so a rate over it exists before its first event.
 */
export function serviceCounter<Label extends string>(config: {
  name: string;
  help: string;
  labelNames: readonly Label[];
  initial?: Partial<Record<Label, string | number>>[];
}): Counter<Label> {
  const counter = new Counter<Label>({
    name: config.name,
    help: config.help,
    labelNames: config.labelNames,
    registers,
  });
  for (const labels of config.initial ?? []) counter.inc(labels, 0);
  return counter;
}

// --- RPC (server and client) -----------------------------------------------------------------

const rpcLabels = ["rpc_service", "rpc_method", "code"] as const;
const rpcServerRequests = new Counter({
  name: "rpc_server_requests_total",
  help: "RPCs answered, by method and Connect code (ok when it succeeded).",
  labelNames: rpcLabels,
  registers,
});
const rpcServerDuration = new Histogram({
  name: "rpc_server_duration_seconds",
  help: "Time from receiving an RPC to its answer, by method.",
  labelNames: ["rpc_service", "rpc_method"],
  buckets: durationBuckets,
  registers,
});
const rpcClientRequests = new Counter({
  name: "rpc_client_requests_total",
  help: "RPCs this process made to another service, by method and Connect code.",
  labelNames: rpcLabels,
  registers,
});
const rpcClientDuration = new Histogram({
  name: "rpc_client_duration_seconds",
  help: "Time from sending an RPC to its answer, as the caller saw it, by method.",
  labelNames: ["rpc_service", "rpc_method"],
  buckets: durationBuckets,
  registers,
});

/** "NotFound" -> "not_found": the codes as the Connect protocol writes them on the wire. */
function codeName(error: unknown): string {
  const code = error === undefined ? undefined : error instanceof ConnectError ? error.code : Code.Unknown;
  if (code === undefined) return "ok";
  return (Code[code] ?? "unknown").replace(/(?<!^)([A-Z])/g, "_$1").toLowerCase();
}

function measuring(requests: Counter<string>, duration: Histogram<string>): Interceptor {
  return (next) => async (req) => {
    const labels = { rpc_service: req.service.typeName, rpc_method: req.method.name };
    const end = duration.startTimer(labels);
    let failure: unknown;
    try {
      return await next(req);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      end();
      requests.inc({ ...labels, code: codeName(failure) });
    }
  };
}

/** Connect server interceptor: rate, errors (by code) and duration of every RPC served. */
export const serverMetrics: Interceptor = measuring(rpcServerRequests, rpcServerDuration);

/** Connect client interceptor: the same, for every RPC this process makes. */
export const clientMetrics: Interceptor = measuring(rpcClientRequests, rpcClientDuration);

// --- HTTP (the public gateway) ---------------------------------------------------------------

const httpRequests = new Counter({
  name: "http_server_requests_total",
  help: "HTTP requests answered, by method, route template and status code.",
  labelNames: ["method", "route", "status_code"],
  registers,
});
const httpDuration = new Histogram({
  name: "http_server_duration_seconds",
  help: "Time from receiving an HTTP request to its answer, by method and route template.",
  labelNames: ["method", "route"],
  buckets: durationBuckets,
  registers,
});

/**
 * Records one answered HTTP request. `route` is the route's template (`/api/v1/affiliates/:id`),
 * never the raw path, so ids do not explode the number of series; requests that matched no route
 * share one label value.
 */
export function observeHttpRequest(request: {
  method: string;
  route: string | undefined;
  statusCode: number;
  seconds: number;
}): void {
  const route = request.route ?? "(unmatched)";
  httpRequests.inc({ method: request.method, route, status_code: String(request.statusCode) });
  httpDuration.observe({ method: request.method, route }, request.seconds);
}

// --- Database pool ---------------------------------------------------------------------------

const poolConnections = new Gauge({
  name: "db_pool_connections",
  help: "Connections this process holds to Postgres, by state (active, idle, idle in transaction).",
  labelNames: ["pool", "state"],
  registers,
});
const poolMax = new Gauge({
  name: "db_pool_max_connections",
  help: "The most connections the pool opens (DATABASE_POOL_SIZE).",
  labelNames: ["pool"],
  registers,
});

/**
 * Samples the pool's connections from pg_stat_activity at scrape time. postgres.js keeps its pool
 * private; Postgres knows each connection by the process-unique application_name that createSql
 * sets, so the count is exact per replica. The sampling query's own connection is not counted.
 */
export function observePool(sql: Sql, pool: string): () => void {
  const max = (sql as unknown as { options: { max: number } }).options.max;
  const applicationName = (sql as unknown as { options: { connection: { application_name: string } } }).options
    .connection.application_name;
  const states = ["active", "idle", "idle in transaction"];
  poolMax.set({ pool }, max);
  const unregister = sampleOnScrape(`db pool ${pool}`, async () => {
    const rows = await sql<{ state: string; connections: number }[]>`
      select state, count(*)::int as connections from pg_stat_activity
      where application_name = ${applicationName} and pid <> pg_backend_pid() and state is not null
      group by state`;
    for (const state of states) {
      poolConnections.set({ pool, state }, rows.find((row) => row.state === state)?.connections ?? 0);
    }
  });
  return () => {
    unregister();
    poolMax.remove({ pool });
    for (const state of states) poolConnections.remove({ pool, state });
  };
}

// --- The metrics server ----------------------------------------------------------------------

export interface MetricsServerOptions {
  port: number;
  host: string;
  logger: Logger;
  /** The service's pool, when it has a database: its use is sampled at each scrape. */
  sql?: Sql;
  /** The service's name: the `service` label of every series, and the pool's label. */
  service: string;
}

export interface MetricsServer {
  /** The bound port (useful when `port` was 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on its own port, apart from the public or RPC
 * port: a NetworkPolicy or a firewall can admit the scraper there and nobody else.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  // Every series names its service, so dashboards need no relabelling to tell services apart.
  metricsRegistry.setDefaultLabels({ service: options.service });
  const stopObservingPool = options.sql ? observePool(options.sql, options.service) : () => {};
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not found: metrics are at GET /metrics\n");
      return;
    }
    collectMetrics().then(
      (text) => res.writeHead(200, { "content-type": metricsRegistry.contentType }).end(text),
      (error: unknown) => {
        options.logger.error({ err: error }, "metrics collection failed");
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ port }, "metrics server listening");
  return {
    port,
    async close() {
      stopObservingPool();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
