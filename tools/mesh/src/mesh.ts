import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import { createServer } from "node:net";
import { join } from "node:path";
import { preflight } from "./preflight.js";
import { repositoryRoot, type ServiceDefinition, services } from "./services.js";

export interface MeshOptions {
  databaseUrl: string;
  natsUrl: string;
  /** Address of the public gateway. */
  host: string;
  port: number;
  /** Ports of the internal services by name; defaults to each service's default port. */
  servicePorts?: Record<string, number>;
  /** Extra environment for every service (EVENTS_NAMESPACE, OTEL_*, rate limits…). */
  env?: Record<string, string>;
  /** "inherit" streams the services' JSON logs; "pipe" keeps the last lines for diagnostics. */
  output?: "inherit" | "pipe";
  /** How long to wait for each service to become ready. */
  readyTimeoutMs?: number;
  /** Aborting it during start-up stops what was started and rejects with MeshError. */
  signal?: AbortSignal;
}

export interface Mesh {
  gatewayUrl: string;
  /** The internal URL of each service, by name. */
  urls: Record<string, string>;
  /** Each service's process id, by name. */
  pids: Record<string, number>;
  /** The last lines the services printed (only with output "pipe"). */
  recentOutput(): string[];
  /** Resolves when a service exits by itself; tells which one. */
  exited: Promise<{ service: string; code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM to every service, gateway first; SIGKILL after 15 s. */
  stop(): Promise<void>;
  /** Stops one service (SIGTERM) and keeps it down, as a crashed or drained replica (fault tests). */
  stopService(name: string): Promise<void>;
  /** Starts a stopped service again with the same environment and waits until it is ready. */
  startService(name: string): Promise<void>;
}

export class MeshError extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function probe(protocol: ServiceDefinition["protocol"], port: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (protocol === "http") {
      const req = http.get({ host: "127.0.0.1", port, path: "/readyz", timeout: 1000 }, (res) => {
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

function collect(child: ChildProcess, lines: string[]) {
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on("data", (chunk: Buffer) => {
      lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      lines.splice(0, Math.max(0, lines.length - 500));
    });
  }
}

/**
 * Starts the mesh as `npm start` does: preflight, migrations, then each service as its own
 * process in dependency order, each awaited until ready.
 */
export async function startMesh(options: MeshOptions): Promise<Mesh> {
  const output = options.output ?? "inherit";
  const lines: string[] = [];
  const problem = await preflight(options.databaseUrl, options.natsUrl);
  if (problem) throw new MeshError(problem);

  const ports = Object.fromEntries(
    services.map((s) => [
      s.name,
      s.protocol === "http" ? options.port : (options.servicePorts?.[s.name] ?? s.defaultPort),
    ]),
  );
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    NATS_URL: options.natsUrl,
    // Local development posts webhooks to local sinks (contract section 9).
    WEBHOOK_ALLOW_PRIVATE: "true",
    ...options.env,
  };
  for (const service of services) Object.assign(baseEnv, service.addressEnv?.(ports[service.name] ?? 0));
  await migrateAll(baseEnv, output, lines);

  const children = new Map<string, ChildProcess>();
  const stopping = new Set<string>();
  let reportExit: (value: { service: string; code: number | null; signal: NodeJS.Signals | null }) => void = () => {};
  const exited = new Promise<{ service: string; code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    reportExit = resolve;
  });

  const launch = async (service: ServiceDefinition) => {
    const port = ports[service.name] ?? 0;
    const host = service.protocol === "http" ? options.host : "127.0.0.1";
    if (!(await portIsFree(port, host))) {
      const variable = service.protocol === "http" ? "PORT" : `${service.name.toUpperCase()}_RPC_PORT`;
      throw new MeshError(
        `port ${port} for ${service.name} is already in use (another mesh?); stop it or set ${variable}`,
      );
    }
    const child = spawn(process.execPath, ["--import", "@affiliate/platform/instrumentation", "dist/main.js"], {
      cwd: join(repositoryRoot, service.directory),
      env: { ...baseEnv, OTEL_SERVICE_NAME: service.name, ...service.listenEnv(port, host) },
      stdio: ["ignore", output, output],
    });
    collect(child, lines);
    children.set(service.name, child);
    child.on("exit", (code, signal) => {
      if (!stopping.has(service.name)) reportExit({ service: service.name, code, signal });
    });
    const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
    while (!(await probe(service.protocol, port))) {
      if (options.signal?.aborted) throw new MeshError("start-up interrupted");
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new MeshError(`${service.name} exited (${child.exitCode ?? child.signalCode}) before it was ready`);
      }
      if (Date.now() > deadline) throw new MeshError(`${service.name} was not ready on port ${port} in time`);
      await sleep(200);
    }
  };

  const stopOne = async (name: string) => {
    const child = children.get(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    stopping.add(name);
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await gone;
    clearTimeout(timer);
  };
  const serviceNamed = (name: string) => {
    const service = services.find((s) => s.name === name);
    if (!service) throw new MeshError(`no service named ${name}`);
    return service;
  };
  const stop = async () => {
    for (const service of [...services].reverse()) await stopOne(service.name);
  };

  try {
    for (const service of services) {
      if (options.signal?.aborted) throw new MeshError("start-up interrupted");
      await launch(service);
    }
  } catch (error) {
    await stop();
    if (error instanceof MeshError && output === "pipe") error.message += `\n${lines.slice(-20).join("\n")}`;
    throw error;
  }

  return {
    gatewayUrl: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.port}`,
    urls: Object.fromEntries(services.map((s) => [s.name, `http://127.0.0.1:${ports[s.name]}`])),
    get pids() {
      return Object.fromEntries([...children].map(([name, child]) => [name, child.pid ?? 0]));
    },
    recentOutput: () => [...lines],
    exited,
    stop,
    async stopService(name) {
      serviceNamed(name);
      await stopOne(name);
    },
    async startService(name) {
      const service = serviceNamed(name);
      stopping.delete(name);
      await launch(service);
    },
  };
}
