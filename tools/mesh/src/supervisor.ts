import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import { join } from "node:path";
import { type Instance, metricsPortFor, portIsFree } from "./placement.js";
import type { RecentOutput } from "./recent-output.js";
import { metricsPortVariable, portVariable, repositoryRoot, type ServiceDefinition } from "./services.js";

/** A failure to start the mesh or one of its services, told in one line. */
export class MeshError extends Error {}

/** A service that ended before it was ready (a dependency it could not reach at start, say). */
class ExitedBeforeReady extends MeshError {}

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

const describeExit = (code: number | null, signal: NodeJS.Signals | null) =>
  signal ? `signal ${signal}` : `code ${code}`;

const inSeconds = (ms: number) => `${ms / 1000} s`;

/** Whether the instance answers 200 on /readyz (HTTP/1.1 for the gateway, HTTP/2 cleartext for RPC services). */
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

/** An instance under supervision: its current process and its recent crashes. */
interface Supervised extends Instance {
  /** Chosen at the first launch and kept across restarts. */
  metricsPort?: number;
  child?: ChildProcess;
  /** Down on purpose (stop, stopService): its exit is not a crash and it is not restarted. */
  held: boolean;
  crashesInARow: number;
  readyAt: number;
  restartTimer?: NodeJS.Timeout;
}

export interface SupervisorOptions {
  /** The environment of every instance; each gets its listen address and METRICS_PORT on top. */
  env: NodeJS.ProcessEnv;
  /** METRICS_PORT by instance name; see MeshOptions.metricsPorts. */
  metricsPorts?: Record<string, number> | undefined;
  /** "inherit" streams the services' output; "pipe" keeps it in `recent`. */
  output: "inherit" | "pipe";
  recent: RecentOutput;
  /** Receives each line the supervisor writes (an exit and its restart, a return). */
  report: (line: string) => void;
  /** How long to wait for an instance to become ready. */
  readyTimeoutMs: number;
  /** Aborting it interrupts a launch waiting for readiness. */
  signal?: AbortSignal | undefined;
}

/**
 * Runs each instance as its own process and keeps it running as an orchestrator would: an
 * instance that dies after it was ready is restarted with back-off (restartBackoff) while the
 * others keep serving, and one stopped on purpose stays down.
 *
 * Instances run in process groups of their own, so a Ctrl-C at the terminal reaches only the
 * launcher, which drains each one exactly once (SIGTERM). Each is also tied to the launcher by an
 * IPC channel: if the launcher itself is killed, the channel closes and every service drains
 * instead of living on as an orphan (see onShutdown in packages/platform).
 */
export class Supervisor {
  private readonly instances = new Map<string, Supervised>();

  constructor(
    instances: Instance[],
    private readonly options: SupervisorOptions,
  ) {
    for (const instance of instances)
      this.instances.set(instance.name, { ...instance, held: false, crashesInARow: 0, readyAt: 0 });
  }

  /** Launches every instance in order, each awaited until ready; on a failure stops what started and rethrows. */
  async startAll(): Promise<void> {
    try {
      for (const entry of this.instances.values()) {
        if (this.options.signal?.aborted) throw new MeshError("start-up interrupted");
        await this.launchUntilReady(entry);
      }
    } catch (error) {
      await this.stopAll();
      throw error;
    }
  }

  /**
   * Launches an instance during start-up; one that exits before it is ready is launched again
   * with the same back-off as a crash (restartBackoff), for as long as its ready timeout lasts:
   * a service that met a NATS TIMEOUT or a Postgres still starting, and gave up, is not the end
   * of the mesh (issue 34). Past the timeout its last exit is the mesh's failure.
   */
  private async launchUntilReady(entry: Supervised): Promise<void> {
    const giveUpAt = Date.now() + this.options.readyTimeoutMs;
    for (let exits = 1; ; exits++) {
      try {
        await this.launch(entry);
        return;
      } catch (error) {
        const delay = Math.min(restartBackoff.firstDelayMs * 2 ** (exits - 1), restartBackoff.maxDelayMs);
        if (!(error instanceof ExitedBeforeReady) || Date.now() + delay > giveUpAt) throw error;
        this.options.report(`${error.message}; starting ${entry.name} again in ${inSeconds(delay)} (exit ${exits})`);
        await sleep(delay);
        if (this.options.signal?.aborted) throw new MeshError("start-up interrupted");
      }
    }
  }

  /** SIGTERM to every instance in reverse start order (gateways first), each drained before the next. */
  async stopAll(): Promise<void> {
    // Gateways first: they stop taking requests while their callees can still answer the ones in flight.
    for (const entry of [...this.instances.values()].reverse()) await this.stopOne(entry);
  }

  /** Stops one instance and keeps it down. */
  stop(name: string): Promise<void> {
    return this.stopOne(this.entryNamed(name));
  }

  /** Starts a stopped instance again with the same environment and waits until it is ready. */
  async start(name: string): Promise<void> {
    const entry = this.entryNamed(name);
    clearTimeout(entry.restartTimer);
    entry.restartTimer = undefined;
    entry.held = false;
    entry.crashesInARow = 0;
    await this.launch(entry);
  }

  /** Each instance's METRICS_PORT, by name (once launched). */
  metricsPorts(): { name: string; service: ServiceDefinition; metricsPort: number | undefined }[] {
    return [...this.instances.values()].map(({ name, service, metricsPort }) => ({ name, service, metricsPort }));
  }

  /** Each instance's current process id, by name (0 before its first launch). */
  pids(): Record<string, number> {
    return Object.fromEntries([...this.instances].map(([name, { child }]) => [name, child?.pid ?? 0]));
  }

  /** Spawns the instance and waits until it is ready; from then on its death is a crash. */
  private async launch(entry: Supervised): Promise<void> {
    const { name, service, port, host } = entry;
    const { options } = this;
    entry.metricsPort ??= await metricsPortFor(entry, options.metricsPorts?.[name]);
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
        ...options.env,
        OTEL_SERVICE_NAME: service.name,
        METRICS_PORT: String(metricsPort),
        ...service.listenEnv(port, host),
      },
      stdio: ["ignore", options.output, options.output, "ipc"],
      detached: true,
    });
    options.recent.collect(child);
    entry.child = child;
    let ready = false;
    child.on("exit", (code, signal) => {
      // Before it is ready, the wait below reports the failure; on purpose, it is no crash.
      if (ready && !entry.held && entry.child === child)
        this.crashed(entry, `${name} exited (${describeExit(code, signal)})`);
    });
    const deadline = Date.now() + options.readyTimeoutMs;
    while (!(await probe(service.protocol, port))) {
      if (options.signal?.aborted) throw new MeshError("start-up interrupted");
      if (entry.held) throw new MeshError(`${name} was stopped before it was ready`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new ExitedBeforeReady(
          `${name} exited (${describeExit(child.exitCode, child.signalCode)}) before it was ready`,
        );
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new MeshError(`${name} was not ready on port ${port} in time`);
      }
      await sleep(200);
    }
    ready = true;
    entry.readyAt = Date.now();
  }

  private crashed(entry: Supervised, what: string): void {
    entry.crashesInARow = Date.now() - entry.readyAt >= stableAfterMs ? 1 : entry.crashesInARow + 1;
    this.scheduleRestart(entry, what);
  }

  private scheduleRestart(entry: Supervised, what: string): void {
    const { name } = entry;
    const crashes = entry.crashesInARow;
    const delay = Math.min(restartBackoff.firstDelayMs * 2 ** (crashes - 1), restartBackoff.maxDelayMs);
    const loop = crashes >= crashLoopAfter ? ": it keeps dying, see its log above" : "";
    this.options.report(`${what}; restarting ${name} in ${inSeconds(delay)} (crash ${crashes} in a row${loop})`);
    entry.restartTimer = setTimeout(async () => {
      entry.restartTimer = undefined;
      if (entry.held) return;
      try {
        await this.launch(entry);
        this.options.report(`${name} is back (pid ${entry.child?.pid})`);
      } catch (error) {
        if (entry.held) return;
        entry.crashesInARow += 1;
        this.scheduleRestart(entry, error instanceof Error ? error.message : String(error));
      }
    }, delay);
  }

  private async stopOne(entry: Supervised): Promise<void> {
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
  }

  private entryNamed(name: string): Supervised {
    const entry = this.instances.get(name);
    if (!entry) throw new MeshError(`no service instance named ${name}`);
    return entry;
  }
}
