/**
 * `npm start`: the whole mesh on one machine, in the foreground, supervised: a service that dies
 * is restarted with back-off while the rest keeps serving. SIGINT (Ctrl-C), SIGTERM or SIGHUP
 * drains every service once and exits 0.
 *
 * Configuration: DATABASE_URL, NATS_URL, HOST, PORT (contract section 1); <SERVICE>_RPC_PORT
 * (e.g. PARTNERS_RPC_PORT) moves an internal service, <SERVICE>_METRICS_PORT its metrics; anything
 * else in the environment reaches every service. With DATABASE_URL or NATS_URL unset and nothing
 * answering on its default address, the launcher starts that server itself (@affiliate/local-servers):
 * LOCAL_POSTGRES_PORT and LOCAL_NATS_PORT move those defaults, LOCAL_SERVERS_DIR their data.
 */
import { join } from "node:path";
import { ensureLocalServers, type LocalServers, LocalServersError } from "@affiliate/local-servers";
import { assertNodeRuntime } from "@affiliate/runtime";
import { MeshError, startMesh } from "./mesh.js";
import { metricsPortVariable, portVariable, repositoryRoot, services } from "./services.js";

assertNodeRuntime("npm start");

const env = process.env;
const options = {
  host: env.HOST ?? "127.0.0.1",
  port: Number(env.PORT ?? 8080),
  servicePorts: Object.fromEntries(
    services.flatMap((s) => {
      const value = s.protocol === "rpc" ? env[portVariable(s)] : undefined;
      return value ? [[s.name, Number(value)]] : [];
    }),
  ),
  metricsPorts: Object.fromEntries(
    services.flatMap((s) => {
      const value = env[metricsPortVariable(s)];
      return value ? [[s.name, Number(value)]] : [];
    }),
  ),
};

// Handlers first: a signal during start-up must stop what has started, not orphan it.
const startup = new AbortController();
let local: LocalServers | undefined;
const starting = (async () => {
  local = await ensureLocalServers({
    databaseUrl: env.DATABASE_URL,
    natsUrl: env.NATS_URL,
    directory: env.LOCAL_SERVERS_DIR ?? join(repositoryRoot, ".local-servers"),
    postgresPort: Number(env.LOCAL_POSTGRES_PORT ?? 5432),
    natsPort: Number(env.LOCAL_NATS_PORT ?? 4222),
    natsServerBinary: env.NATS_SERVER_BIN,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  if (startup.signal.aborted) throw new MeshError("start-up interrupted");
  const { databaseUrl, natsUrl } = local;
  return startMesh({ ...options, databaseUrl, natsUrl, output: "inherit", signal: startup.signal });
})();
let stopping = false;
const shutdown = async (signal: string) => {
  // A Ctrl-C under `npm start` arrives twice (from the terminal, and forwarded by npm), and a
  // second press should not cut a drain short: the services are killed after 15 s anyway.
  if (stopping) return;
  stopping = true;
  process.stderr.write(`${signal}: stopping the mesh\n`);
  startup.abort();
  // An interrupted start-up stops its own services before it rejects.
  await starting.then((mesh) => mesh.stop()).catch(() => undefined);
  // Postgres and NATS last: the services drained against them.
  await local?.stop();
  process.stderr.write("mesh stopped\n");
  process.exit(0);
};
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void shutdown(signal));

try {
  const mesh = await starting;
  process.stderr.write(`mesh ready: gateway on ${mesh.gatewayUrl} (Ctrl-C stops it)\n`);
  const metrics = Object.entries(mesh.metricsUrls).map(([name, url]) => `${name} ${url}`);
  process.stderr.write(`metrics: ${metrics.join(", ")}\n`);
  // From here on the supervisor keeps the services up; the signal handlers end the process.
} catch (error) {
  // An interrupted start-up is reported by the signal handler, which exits.
  if (!startup.signal.aborted) {
    const known = error instanceof MeshError || error instanceof LocalServersError;
    process.stderr.write(`${known ? error.message : `failed to start the mesh: ${String(error)}`}\n`);
    await local?.stop();
    process.exit(1);
  }
}
