import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { embeddedPostgresBin } from "@affiliate/local-servers";
import { connect } from "nats";
import postgres from "postgres";
import { alive, freePort, killAndWait } from "./processes.js";

/**
 * Real clusters on one machine for high-availability tests: a three-node JetStream cluster and a
 * Postgres primary with a synchronous streaming standby. Each is started by the test on free
 * ports in temporary directories of its own and removed on stop: the machine's shared servers
 * are never touched.
 */

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMs: number, attempt: () => Promise<T | undefined>): Promise<T> {
  const giveUpAt = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const result = await attempt();
      if (result !== undefined) return result;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > giveUpAt) throw new Error(`${what} within ${timeoutMs} ms: ${String(lastError ?? "no")}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// NATS

export interface NatsCluster {
  /** Every node's client URL, comma-separated: what NATS_URL is set to. */
  url: string;
  /** Each node's client URL, by index. */
  urls: string[];
  /** kill -9 of node `index`, as a crashed machine; resolves once it is gone. */
  kill(index: number): Promise<void>;
  /** Starts node `index` again on its ports and store; resolves when it serves JetStream. */
  restart(index: number): Promise<void>;
  /** SIGSTOP of node `index`: its connections stay open and answer nothing (a frozen machine). */
  freeze(index: number): void;
  /** SIGCONT of a frozen node: it resumes where it stopped. */
  thaw(index: number): void;
  /** The index of the node a JetStream answer names (a stream's `cluster.leader`), or -1. */
  indexOf(serverName: string): number;
  stop(): Promise<void>;
}

const natsServer = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";

/**
 * Three `nats-server` processes forming one JetStream cluster, each with its own client and
 * route port and store directory. Resolves once a meta leader is elected and JetStream answers.
 */
export async function startNatsCluster(options: { nodes?: number } = {}): Promise<NatsCluster> {
  const count = options.nodes ?? 3;
  const directory = mkdtempSync(join(tmpdir(), "nats-cluster-"));
  const nodes: { name: string; port: number; routePort: number; config: string; process?: ChildProcess }[] = [];
  for (let i = 0; i < count; i++) {
    nodes.push({ name: `n${i + 1}`, port: await freePort(), routePort: await freePort(), config: "" });
  }
  const routes = nodes.map((node) => `nats-route://127.0.0.1:${node.routePort}`);
  for (const node of nodes) {
    node.config = join(directory, `${node.name}.conf`);
    writeFileSync(
      node.config,
      [
        `server_name: ${node.name}`,
        // A frozen peer (a route or a client that answers nothing) is given up on after ~6 s,
        // not the default 2 minutes x 2, as a production cluster facing half-open links should.
        "ping_interval: 2s",
        "ping_max: 3",
        `listen: 127.0.0.1:${node.port}`,
        `jetstream { store_dir: "${join(directory, node.name)}", max_memory_store: 64MB, max_file_store: 1GB }`,
        `cluster { name: ha, listen: 127.0.0.1:${node.routePort}, routes: [${routes.join(", ")}] }`,
        "",
      ].join("\n"),
    );
  }
  const urls = nodes.map((node) => `nats://127.0.0.1:${node.port}`);

  const start = (index: number) => {
    const node = nodes[index];
    if (!node) throw new Error(`no NATS node ${index}`);
    node.process = spawn(natsServer, ["-c", node.config, "-l", join(directory, `${node.name}.log`)], {
      stdio: "ignore",
    });
  };
  /** Resolves when JetStream answers through node `index` (its cluster has a meta leader). */
  const serving = (index: number) =>
    until(`NATS node ${index} serving JetStream`, 30_000, async () => {
      const nc = await connect({ servers: urls[index], reconnect: false, timeout: 1000 });
      try {
        await (await nc.jetstreamManager()).getAccountInfo();
        return true;
      } finally {
        await nc.close();
      }
    });

  const stop = async () => {
    for (const node of nodes) if (node.process?.pid) await killAndWait(node.process.pid);
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) start(i);
    for (let i = 0; i < count; i++) await serving(i);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    url: urls.join(","),
    urls,
    async kill(index) {
      const pid = nodes[index]?.process?.pid;
      if (pid) await killAndWait(pid);
    },
    async restart(index) {
      start(index);
      await serving(index);
    },
    freeze(index) {
      const pid = nodes[index]?.process?.pid;
      if (pid) process.kill(pid, "SIGSTOP");
    },
    thaw(index) {
      const pid = nodes[index]?.process?.pid;
      if (pid) process.kill(pid, "SIGCONT");
    },
    indexOf(serverName) {
      return nodes.findIndex((node) => node.name === serverName);
    },
    stop,
  };
}

// ---------------------------------------------------------------------------------------------
// Postgres

export interface PostgresCluster {
  /**
   * A URL naming both servers, as a service is given it: postgres.js tries them in turn and keeps
   * the one that is the primary (`target_session_attrs=primary`).
   */
  url(database?: string): string;
  /** The URL of the server currently primary (for the test's own reads of the truth). */
  primaryUrl(database?: string): string;
  /** Creates a database on the primary (streamed to the standby); returns the cluster URL of it. */
  createDatabase(name: string): Promise<string>;
  /** kill -9 of the primary's postmaster and every backend, as a crashed machine. */
  killPrimary(): Promise<void>;
  /**
   * kill -9 of the primary's postmaster alone: its backends live on until they notice (each at
   * its next wait), as when only the supervising process dies. rejoin() ends them.
   */
  killPostmaster(): Promise<void>;
  /** A clean stop of the primary (`pg_ctl stop -m fast`: sessions ended, a final checkpoint). */
  stopPrimary(): Promise<void>;
  /**
   * SIGSTOP of the primary's postmaster and every backend: a frozen machine whose connections
   * stay open and answer nothing (half-open). rejoin() kills them.
   */
  freezePrimary(): Promise<void>;
  /** Promotes the standby to primary, as an operator (CloudNativePG, Patroni) does. */
  promote(): Promise<void>;
  /**
   * Brings the killed former primary back as the new primary's synchronous standby (a fresh
   * base backup, as an operator rebuilds a failed instance), so the cluster can fail over again.
   */
  rejoin(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The path of a Postgres server binary (initdb, pg_ctl, pg_basebackup): the one place that
 * decides where they are. POSTGRES_BIN, else the OS's Postgres 15, else the embedded one that
 * npm installed for `npm start` (@affiliate/local-servers), which has initdb, pg_ctl and postgres
 * but no pg_basebackup (the standby is then built without it: see baseBackup).
 */
export function postgresBin(name: string): string {
  postgresBinFolder ??= (() => {
    if (process.env.POSTGRES_BIN) return process.env.POSTGRES_BIN;
    const os = "/usr/lib/postgresql/15/bin";
    if (existsSync(join(os, "pg_ctl"))) return os;
    const embedded = embeddedPostgresBin();
    if (embedded) return embedded;
    throw new Error(
      `no Postgres binaries: none in ${os} (or POSTGRES_BIN), and no embedded Postgres for this platform`,
    );
  })();
  return join(postgresBinFolder, name);
}
let postgresBinFolder: string | undefined;

/** Runs a Postgres binary as the `postgres` user (initdb and the server refuse to run as root). */
function asPostgres(binary: string, args: string[]) {
  const command = postgresBin(binary);
  return process.getuid?.() === 0
    ? run("runuser", ["-u", "postgres", "--", command, ...args], { cwd: "/" })
    : run(command, args, { cwd: "/" });
}

function ownedByPostgres(path: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = postgresUser();
  chownSync(path, uid, gid);
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined) throw new Error("no postgres user on this machine");
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * A Postgres primary and a hot standby that streams its WAL synchronously (a commit is answered
 * once the standby has it, as with CloudNativePG's or Patroni's synchronous mode), each on a free
 * port with its data in a temporary directory, run as the `postgres` user. The standby is set up
 * to need no synchronous standby itself once promoted (the operator's job in production).
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const directory = mkdtempSync(join(tmpdir(), "pg-cluster-"));
  ownedByPostgres(directory);
  const servers = [
    { name: "primary", port: await freePort(), data: join(directory, "primary") },
    { name: "standby", port: await freePort(), data: join(directory, "standby") },
  ];
  type Server = (typeof servers)[0];
  const [first, second] = servers as [Server, Server];
  let primary = first;
  let standby = second;
  const settings = (port: number, extra: string[]) =>
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${directory}'`,
      "max_connections = 300",
      "shared_buffers = 32MB",
      "wal_level = replica",
      "max_wal_senders = 5",
      "hot_standby = on",
      // Durable against a killed process (the OS keeps its writes): only a machine crash needs fsync.
      "fsync = off",
      "full_page_writes = off",
      ...extra,
      "",
    ].join("\n");
  const serverLog = (server: Server) => join(directory, `${server.name}.log`);
  const startServer = (server: Server) =>
    asPostgres("pg_ctl", ["-D", server.data, "-l", serverLog(server), "-w", "-t", "60", "start"]);
  const postmasterPid = (server: Server) => {
    try {
      return Number(readFileSync(join(server.data, "postmaster.pid"), "utf8").split("\n")[0]);
    } catch {
      return undefined;
    }
  };
  const urlOf = (ports: number[], database = "postgres", attributes = "") =>
    `postgres://postgres@${ports.map((port) => `127.0.0.1:${port}`).join(",")}/${database}${attributes}`;

  /**
   * A base backup of `source` into `data`: pg_basebackup where the binaries have it, else (the
   * embedded Postgres) Postgres's low-level backup API in one session: pg_backup_start, the
   * files copied, pg_backup_stop, its backup_label written, and the WAL up to the stop copied so
   * the standby reaches a consistent state before it streams.
   */
  const baseBackup = async (source: Server, data: string) => {
    if (existsSync(postgresBin("pg_basebackup"))) {
      await asPostgres("pg_basebackup", [
        "-h",
        "127.0.0.1",
        "-p",
        String(source.port),
        "-U",
        "postgres",
        "-D",
        data,
        "-X",
        "stream",
        // Now, not after a checkpoint spread over minutes.
        "--checkpoint=fast",
        "--no-sync",
      ]);
      return;
    }
    const sql = postgres(urlOf([source.port]), { max: 1, onnotice: () => {} });
    try {
      await sql`select pg_backup_start('standby', true)`;
      // Not the server's own state, nor temporary files that may vanish while copied.
      const skipped = new Set(["postmaster.pid", "postmaster.opts", "pg_stat_tmp", "pgsql_tmp", "pg_replslot"]);
      cpSync(source.data, data, { recursive: true, filter: (path) => !skipped.has(basename(path)) });
      const [stopped] = await sql<{ labelfile: string }[]>`select labelfile from pg_backup_stop(false)`;
      cpSync(join(source.data, "pg_wal"), join(data, "pg_wal"), { recursive: true, force: true });
      writeFileSync(join(data, "backup_label"), stopped?.labelfile ?? "");
      for (const folder of ["pg_stat_tmp", "pg_replslot"]) mkdirSync(join(data, folder), { recursive: true });
    } finally {
      await sql.end();
    }
    chmodSync(data, 0o700);
    const own = (path: string) => {
      ownedByPostgres(path);
      if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) own(join(path, entry));
    };
    own(data);
  };

  /**
   * Makes `server` a hot standby of `source` from a fresh base backup and waits until `source`
   * counts it as its synchronous standby.
   */
  const attachStandby = async (server: Server, source: Server) => {
    rmSync(server.data, { recursive: true, force: true });
    await baseBackup(source, server.data);
    // Its own settings replace the primary's copied ones: no synchronous standby of its own, so
    // once promoted it commits alone (as an operator reconfigures a primary left without one).
    writeFileSync(
      join(server.data, "postgresql.auto.conf"),
      settings(server.port, [
        "synchronous_standby_names = ''",
        `primary_conninfo = 'host=127.0.0.1 port=${source.port} user=postgres application_name=standby'`,
      ]),
    );
    writeFileSync(join(server.data, "standby.signal"), "");
    ownedByPostgres(join(server.data, "postgresql.auto.conf"));
    ownedByPostgres(join(server.data, "standby.signal"));
    await startServer(server);
    const sql = postgres(urlOf([source.port]), { max: 1, onnotice: () => {} });
    try {
      // A promoted primary commits alone until a standby is back; from now on, with it.
      await sql`alter system set synchronous_standby_names = 'standby'`;
      await sql`select pg_reload_conf()`;
      await until("the standby streaming synchronously", 30_000, async () => {
        const rows = await sql`
          select 1 from pg_stat_replication where application_name = 'standby' and sync_state = 'sync'`;
        return rows.length === 1 ? true : undefined;
      });
    } finally {
      await sql.end();
    }
  };

  /** Processes of a lost former primary (orphaned or frozen backends) that rejoin() or stop() must end. */
  let leftovers: number[] = [];
  const killLeftovers = async () => {
    for (const pid of leftovers) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const pid of leftovers) while (alive(pid)) await sleep(20);
    leftovers = [];
  };

  const stop = async () => {
    await killLeftovers();
    for (const server of servers) {
      const pid = postmasterPid(server);
      if (pid && alive(pid)) await killServer(pid);
    }
    rmSync(directory, { recursive: true, force: true });
  };

  try {
    await asPostgres("initdb", ["-D", first.data, "-U", "postgres", "--auth=trust", "--no-sync"]);
    writeFileSync(join(first.data, "postgresql.auto.conf"), settings(first.port, ["synchronous_commit = on"]));
    await startServer(first);
    await attachStandby(second, first);
  } catch (error) {
    const logs = servers.map((server) => {
      try {
        return readFileSync(serverLog(server), "utf8").slice(-2000);
      } catch {
        return "";
      }
    });
    await stop();
    throw new Error(`${String(error)}\n${logs.join("\n")}`);
  }

  return {
    url: (database) => urlOf([first.port, second.port], database, "?target_session_attrs=primary"),
    primaryUrl: (database) => urlOf([primary.port], database),
    async createDatabase(name) {
      const sql = postgres(urlOf([primary.port]), { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`create database "${name}"`);
      } finally {
        await sql.end();
      }
      return urlOf([first.port, second.port], name, "?target_session_attrs=primary");
    },
    async killPrimary() {
      const pid = postmasterPid(primary);
      if (pid) await killServer(pid);
    },
    async killPostmaster() {
      const pid = postmasterPid(primary);
      if (!pid) return;
      leftovers = childrenOf(pid);
      process.kill(pid, "SIGKILL");
      while (alive(pid)) await sleep(20);
    },
    async stopPrimary() {
      await asPostgres("pg_ctl", ["-D", primary.data, "-m", "fast", "-w", "-t", "60", "stop"]);
    },
    async freezePrimary() {
      const pid = postmasterPid(primary);
      if (!pid) return;
      // The postmaster first, so it starts no backend the freeze would miss.
      process.kill(pid, "SIGSTOP");
      leftovers = [pid, ...childrenOf(pid)];
      for (const child of leftovers.slice(1)) {
        try {
          process.kill(child, "SIGSTOP");
        } catch {
          // gone meanwhile
        }
      }
    },
    async promote() {
      await asPostgres("pg_ctl", ["-D", standby.data, "-w", "-t", "60", "promote"]);
      [primary, standby] = [standby, primary];
    },
    async rejoin() {
      await killLeftovers();
      const pid = postmasterPid(standby);
      if (pid && alive(pid)) await killServer(pid);
      await attachStandby(standby, primary);
    },
    stop,
  };
}

/** kill -9 of a postmaster and its children (the backends), as when its machine dies. */
async function killServer(postmaster: number): Promise<void> {
  const children = childrenOf(postmaster);
  for (const pid of [postmaster, ...children]) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const pid of [postmaster, ...children]) while (alive(pid)) await sleep(20);
}

/** The processes whose parent is `parent`, read from /proc (no process to spawn: the kill is at once). */
function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "pid (comm) state ppid …": the command may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}
