import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import { createServer } from "node:net";
import { join } from "node:path";
import { preflight } from "./preflight.js";
import { metricsPortVariable, portVariable, repositoryRoot, type ServiceDefinition, services } from "./services.js";

export interface MeshOptions {
  databaseUrl: string;
  natsUrl: string;
  /** Address of the public gateway. */
  host: string;
  port: number;
  /**
   * Ports of the internal services by instance name (see `replicas`); each service's first
   * instance defaults to its default port, a further one to any free port. `gateway-2` and on
   * are named here too (the first gateway listens on `port`).
   */
  servicePorts?: Record<string, number>;
  /**
   * METRICS_PORT of each instance by name. One not named here gets its service's default metrics
   * port, or any free port when that one is taken (several meshes or replicas on one machine).
   */
  metricsPorts?: Record<string, number>;
  /**
   * How many processes (replicas) of each service to run, by service name; 1 when not named.
   * The first is named as its service (`ledger`), the others `ledger-2`, `ledger-3`… Callers of
   * an internal service get every replica's URL and balance over them (createRpcTransport); the
   * gateways each listen on a port of their own, for a balancer in front (`gatewayUrls`).
   */
  replicas?: Record<string, number>;
  /** Extra environment for every service (EVENTS_NAMESPACE, OTEL_*, rate limits…). */
  env?: Record<string, string>;
  /** "inherit" streams the services' JSON logs; "pipe" keeps the last lines for diagnostics. */
  output?: "inherit" | "pipe";
  /** How long to wait for each service to become ready. */
  readyTimeoutMs?: number;
  /** Aborting it during start-up stops what was started and rejects with MeshError. */
  signal?: AbortSignal;
  /**
   * Also receives each line the supervisor writes (a service exited and when it restarts, a
   * service back). Those lines go to stderr with output "inherit", to recentOutput() with "pipe".
   */
  report?: (line: string) => void;
}

export interface Mesh {
  /** The first gateway. */
  gatewayUrl: string;
  /** Every gateway replica, first to last. */
  gatewayUrls: string[];
  /** Where callers reach each internal service, by service name: its replicas' URLs, comma-separated. */
  urls: Record<string, string>;
  /** Where each instance serves its Prometheus metrics, by instance name. */
  metricsUrls: Record<string, string>;
  /** Each instance's current process id, by instance name (a restarted one has a new one). */
  pids: Record<string, number>;
  /** The last lines the services and the supervisor printed (only with output "pipe"). */
  recentOutput(): string[];
  /** SIGTERM to every instance, gateways first, each drained before the next; SIGKILL after 15 s. */
  stop(): Promise<void>;
  /** Stops one instance (SIGTERM) and keeps it down, as a drained replica (fault tests). */
  stopService(name: string): Promise<void>;
  /** Starts a stopped instance again with the same environment and waits until it is ready. */
  startService(name: string): Promise<void>;
}

export class MeshError extends Error {}

/**
 * Restarts after a crash wait 1 s, doubling with each crash in a row up to 30 s, and never give
 * up: Kubernetes' CrashLoopBackOff (10 s to 5 min) scaled to one machine. The rest of the mesh
 * keeps serving meanwhile, and a service that comes back (say, once Postgres is up again) needs
 * no one to restart the mesh.
 */
const restartBackoff = { firstDelayMs: 1000, maxDelayMs: 30_000 };
/** A service that stayed up this long before it died starts its count of crashes in a row afresh. */
const stableAfterMs = 60_000;
/** From this many crashes in a row on, each restart line says the service keeps dying. */
const crashLoopAfter = 3;
/** How long a stopping service may drain before it is killed. */
const drainTimeoutMs = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function probe(protocol: ServiceDefinition["protocol"], port: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (protocol === "http") {
      // No keep-alive agent: an idle probe connection would only make the gateway's drain wait for it.
      const req = http.get({ host: "127.0.0.1", port, path: "/readyz", timeout: 1000, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on("error", () => resolve(false));
      req.on("timeout", () => req.destroy());
      return;
    }
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", () => resolve(false));
    session.setTimeout(1000, () => {
      session.destroy();
      resolve(false);
    });
    const req = session.request({ ":path": "/readyz" });
    req.on("response", (headers) => {
      resolve(headers[":status"] === 200);
      session.close();
    });
    req.on("error", () => resolve(false));
    req.end();
  });
}

/**
 * Whether nothing listens on the port. Checked before a service starts: otherwise its readiness
 * probe could be answered by whatever holds the port while the service itself dies.
 */
function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** A port the system just gave out as free. */
function anyFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Runs `node dist/migrate.js` of every service that owns a schema, one after another. */
async function migrateAll(env: NodeJS.ProcessEnv, output: "inherit" | "pipe", lines: string[]): Promise<void> {
  for (const service of services.filter((s) => s.migrates)) {
    const child = spawn(process.execPath, ["dist/migrate.js"], {
      cwd: join(repositoryRoot, service.directory),
      env,
      stdio: ["ignore", output, output],
    });
    collect(child, lines);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    if (code !== 0) {
      throw new MeshError(
        `migrations of ${service.name} failed (exit ${code})${output === "pipe" ? `:\n${lines.slice(-10).join("\n")}` : ""}`,
      );
    }
  }
}

function remember(lines: string[], text: string) {
  lines.push(...text.split("\n").filter(Boolean));
  lines.splice(0, Math.max(0, lines.length - 500));
}

function collect(child: ChildProcess, lines: string[]) {
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on("data", (chunk: Buffer) => remember(lines, chunk.toString("utf8")));
  }
}

const describeExit = (code: number | null, signal: NodeJS.Signals | null) =>
  signal ? `signal ${signal}` : `code ${code}`;

const inSeconds = (ms: number) => `${ms / 1000} s`;

/** One instance (a replica of a service) under supervision: its current process and its recent crashes. */
interface Supervised {
  /** The service's name for its first instance, `<service>-<n>` for the n-th. */
  name: string;
  service: ServiceDefinition;
  port: number;
  /** Chosen at the first launch and kept across restarts. */
  metricsPort?: number;
  child?: ChildProcess;
  /** Down on purpose (stop, stopService): its exit is not a crash and it is not restarted. */
  held: boolean;
  crashesInARow: number;
  readyAt: number;
  restartTimer?: NodeJS.Timeout;
}

/**
 * Starts the mesh as `npm start` does: preflight, migrations, then each service as its own
 * process in dependency order, each awaited until ready, then supervised: a service that dies
 * is restarted with back-off while the others keep serving.
 *
 * Services run in process groups of their own, so a Ctrl-C at the terminal reaches only the
 * launcher, which drains each service exactly once (SIGTERM, gateway first). Each is also tied to
 * the launcher by an IPC channel: if the launcher itself is killed, the channel closes and every
 * service drains instead of living on as an orphan (see onShutdown in packages/platform).
 */
export async function startMesh(options: MeshOptions): Promise<Mesh> {
  const output = options.output ?? "inherit";
  const lines: string[] = [];
  const report = (line: string) => {
    if (output === "pipe") remember(lines, line);
    else process.stderr.write(`${line}\n`);
    options.report?.(line);
  };
  const problem = await preflight(options.databaseUrl, options.natsUrl);
  if (problem) throw new MeshError(problem);

  const supervised = new Map<string, Supervised>();
  for (const service of services) {
    for (let n = 1; n <= (options.replicas?.[service.name] ?? 1); n++) {
      const name = n === 1 ? service.name : `${service.name}-${n}`;
      const host = service.protocol === "http" ? options.host : "127.0.0.1";
      // The first gateway listens on `port`; every other instance may be placed by `servicePorts`.
      const placed = service.protocol === "http" && n === 1 ? options.port : options.servicePorts?.[name];
      const port = placed ?? (n === 1 ? service.defaultPort : await anyFreePort(host));
      supervised.set(name, { name, service, port, held: false, crashesInARow: 0, readyAt: 0 });
    }
  }
  const instancesOf = (service: ServiceDefinition) => [...supervised.values()].filter((e) => e.service === service);
  /** Where callers reach a service: every replica's URL, comma-separated (see createRpcTransport). */
  const callerUrl = (service: ServiceDefinition) =>
    instancesOf(service)
      .map(({ port }) => `http://127.0.0.1:${port}`)
      .join(",");
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    NATS_URL: options.natsUrl,
    // Local development posts webhooks to local sinks (contract section 9).
    WEBHOOK_ALLOW_PRIVATE: "true",
    ...options.env,
  };
  for (const service of services) Object.assign(baseEnv, service.addressEnv?.(callerUrl(service)));
  await migrateAll(baseEnv, output, lines);

  /** Spawns the service and waits until it is ready; from then on its death is a crash. */
  const launch = async (entry: Supervised) => {
    const { name, service, port } = entry;
    const host = service.protocol === "http" ? options.host : "127.0.0.1";
    entry.metricsPort ??=
      options.metricsPorts?.[name] ??
      ((await portIsFree(service.defaultMetricsPort, host)) ? service.defaultMetricsPort : await anyFreePort(host));
    const { metricsPort } = entry;
    for (const [taken, variable] of [
      [port, portVariable(service)],
      [metricsPort, metricsPortVariable(service)],
    ] as const) {
      if (!(await portIsFree(taken, host))) {
        throw new MeshError(`port ${taken} for ${name} is already in use (another mesh?); stop it or set ${variable}`);
      }
    }
    const child = spawn(process.execPath, ["--import", "@affiliate/platform/instrumentation", "dist/main.js"], {
      cwd: join(repositoryRoot, service.directory),
      env: {
        ...baseEnv,
        OTEL_SERVICE_NAME: service.name,
        METRICS_PORT: String(metricsPort),
        ...service.listenEnv(port, host),
      },
      stdio: ["ignore", output, output, "ipc"],
      detached: true,
    });
    collect(child, lines);
    entry.child = child;
    let ready = false;
    child.on("exit", (code, signal) => {
      // Before it is ready, the wait below reports the failure; on purpose, it is no crash.
      if (ready && !entry.held && entry.child === child)
        crashed(entry, `${name} exited (${describeExit(code, signal)})`);
    });
    const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
    while (!(await probe(service.protocol, port))) {
      if (options.signal?.aborted) throw new MeshError("start-up interrupted");
      if (entry.held) throw new MeshError(`${name} was stopped before it was ready`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new MeshError(`${name} exited (${describeExit(child.exitCode, child.signalCode)}) before it was ready`);
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new MeshError(`${name} was not ready on port ${port} in time`);
      }
      await sleep(200);
    }
    ready = true;
    entry.readyAt = Date.now();
  };

  const crashed = (entry: Supervised, what: string) => {
    entry.crashesInARow = Date.now() - entry.readyAt >= stableAfterMs ? 1 : entry.crashesInARow + 1;
    scheduleRestart(entry, what);
  };

  const scheduleRestart = (entry: Supervised, what: string) => {
    const { name } = entry;
    const crashes = entry.crashesInARow;
    const delay = Math.min(restartBackoff.firstDelayMs * 2 ** (crashes - 1), restartBackoff.maxDelayMs);
    const loop = crashes >= crashLoopAfter ? ": it keeps dying, see its log above" : "";
    report(`${what}; restarting ${name} in ${inSeconds(delay)} (crash ${crashes} in a row${loop})`);
    entry.restartTimer = setTimeout(async () => {
      entry.restartTimer = undefined;
      if (entry.held) return;
      try {
        await launch(entry);
        report(`${name} is back (pid ${entry.child?.pid})`);
      } catch (error) {
        if (entry.held) return;
        entry.crashesInARow += 1;
        scheduleRestart(entry, error instanceof Error ? error.message : String(error));
      }
    }, delay);
  };

  const stopOne = async (entry: Supervised) => {
    entry.held = true;
    clearTimeout(entry.restartTimer);
    entry.restartTimer = undefined;
    const child = entry.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), drainTimeoutMs);
    await gone;
    clearTimeout(timer);
  };
  const entryNamed = (name: string) => {
    const entry = supervised.get(name);
    if (!entry) throw new MeshError(`no service instance named ${name}`);
    return entry;
  };
  // Gateways first: they stop taking requests while their callees can still answer the ones in flight.
  const stop = async () => {
    for (const entry of [...supervised.values()].reverse()) await stopOne(entry);
  };

  try {
    for (const entry of supervised.values()) {
      if (options.signal?.aborted) throw new MeshError("start-up interrupted");
      await launch(entry);
    }
  } catch (error) {
    await stop();
    if (error instanceof MeshError && output === "pipe") error.message += `\n${lines.slice(-20).join("\n")}`;
    throw error;
  }

  const publicHost = options.host.includes(":") ? `[${options.host}]` : options.host;
  const gatewayUrls = [...supervised.values()]
    .filter(({ service }) => service.protocol === "http")
    .map(({ port }) => `http://${publicHost}:${port}`);
  return {
    gatewayUrl: gatewayUrls[0] ?? "",
    gatewayUrls,
    urls: Object.fromEntries(services.map((service) => [service.name, callerUrl(service)])),
    get metricsUrls() {
      return Object.fromEntries(
        [...supervised].map(([name, { service, metricsPort }]) => {
          const host = service.protocol === "http" && options.host !== "0.0.0.0" ? options.host : "127.0.0.1";
          return [name, `http://${host.includes(":") ? `[${host}]` : host}:${metricsPort}/metrics`];
        }),
      );
    },
    get pids() {
      return Object.fromEntries([...supervised].map(([name, { child }]) => [name, child?.pid ?? 0]));
    },
    recentOutput: () => [...lines],
    stop,
    stopService: (name) => stopOne(entryNamed(name)),
    async startService(name) {
      const entry = entryNamed(name);
      clearTimeout(entry.restartTimer);
      entry.restartTimer = undefined;
      entry.held = false;
      entry.crashesInARow = 0;
      await launch(entry);
    },
  };
}
