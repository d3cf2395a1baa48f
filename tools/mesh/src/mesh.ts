import { spawn } from "node:child_process";
import { join } from "node:path";
import { callerUrls, placeInstances } from "./placement.js";
import { preflight, preflightWarnings } from "./preflight.js";
import { RecentOutput } from "./recent-output.js";
import { repositoryRoot, services } from "./services.js";
import { MeshError, Supervisor } from "./supervisor.js";

export { MeshError } from "./supervisor.js";

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

/**
 * Starts the mesh as `npm start` does: preflight, placement (each instance's port, and the URLs
 * callers reach it at), migrations, then each instance as its own process in dependency order,
 * each awaited until ready, then supervised (supervisor.ts): a service that dies is restarted
 * with back-off while the others keep serving.
 */
export async function startMesh(options: MeshOptions): Promise<Mesh> {
  const output = options.output ?? "inherit";
  const recent = new RecentOutput();
  const report = (line: string) => {
    if (output === "pipe") recent.add(line);
    else process.stderr.write(`${line}\n`);
    options.report?.(line);
  };
  // Servers still starting are waited for a few seconds; each wait is told to options.report only.
  const problem = await preflight(options.databaseUrl, options.natsUrl, { report: options.report });
  if (problem) throw new MeshError(problem);
  for (const warning of await preflightWarnings(options.databaseUrl)) report(warning);

  const instances = await placeInstances(options);
  const urls = callerUrls(instances);
  const publicHost = options.host.includes(":") ? `[${options.host}]` : options.host;
  const env: NodeJS.ProcessEnv = {
    // Emails link to this mesh's own portal, unless the environment names a public one.
    PORTAL_URL: `http://${options.host === "0.0.0.0" ? "127.0.0.1" : publicHost}:${options.port}/portal`,
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    NATS_URL: options.natsUrl,
    // Local development posts webhooks to local sinks (contract section 9).
    WEBHOOK_ALLOW_PRIVATE: "true",
    ...options.env,
  };
  for (const service of services) Object.assign(env, service.addressEnv?.(urls[service.name] ?? ""));
  const supervisor = new Supervisor(instances, {
    env,
    metricsPorts: options.metricsPorts,
    output,
    recent,
    report,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
    signal: options.signal,
  });
  await migrateAll(env, output, recent);
  try {
    await supervisor.startAll();
  } catch (error) {
    if (error instanceof MeshError && output === "pipe") error.message += `\n${recent.last(20).join("\n")}`;
    throw error;
  }

  const gatewayUrls = instances
    .filter(({ service }) => service.protocol === "http")
    .map(({ port }) => `http://${publicHost}:${port}`);
  return {
    gatewayUrl: gatewayUrls[0] ?? "",
    gatewayUrls,
    urls,
    get metricsUrls() {
      return Object.fromEntries(
        supervisor.metricsPorts().map(({ name, service, metricsPort }) => {
          const host = service.protocol === "http" && options.host !== "0.0.0.0" ? options.host : "127.0.0.1";
          return [name, `http://${host.includes(":") ? `[${host}]` : host}:${metricsPort}/metrics`];
        }),
      );
    },
    get pids() {
      return supervisor.pids();
    },
    recentOutput: () => recent.last(),
    stop: () => supervisor.stopAll(),
    stopService: (name) => supervisor.stop(name),
    startService: (name) => supervisor.start(name),
  };
}

/** Runs `node dist/migrate.js` of every service that owns a schema, one after another. */
async function migrateAll(env: NodeJS.ProcessEnv, output: "inherit" | "pipe", recent: RecentOutput): Promise<void> {
  for (const service of services.filter((s) => s.migrates)) {
    const child = spawn(process.execPath, ["dist/migrate.js"], {
      cwd: join(repositoryRoot, service.directory),
      env,
      stdio: ["ignore", output, output],
    });
    recent.collect(child);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    if (code !== 0) {
      throw new MeshError(
        `migrations of ${service.name} failed (exit ${code})${output === "pipe" ? `:\n${recent.last(10).join("\n")}` : ""}`,
      );
    }
  }
}
