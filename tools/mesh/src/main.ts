/**
 * `npm start`: the whole mesh on one machine, in the foreground, supervised: a service that dies
 * is restarted with back-off while the rest keeps serving. SIGINT (Ctrl-C), SIGTERM or SIGHUP
 * drains every service once and exits 0.
 *
 * Configuration: DATABASE_URL, NATS_URL, HOST, PORT (contract section 1); <SERVICE>_RPC_PORT
 * (e.g. PARTNERS_RPC_PORT) moves an internal service, <SERVICE>_METRICS_PORT its metrics; anything
 * else in the environment reaches every service.
 */
import { assertNodeRuntime } from "@affiliate/runtime";
import { MeshError, startMesh } from "./mesh.js";
import { metricsPortVariable, portVariable, services } from "./services.js";

assertNodeRuntime("npm start");

const env = process.env;
const options = {
  databaseUrl: env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  natsUrl: env.NATS_URL ?? "nats://127.0.0.1:4222",
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
const starting = startMesh({ ...options, output: "inherit", signal: startup.signal });
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
    process.stderr.write(
      `${error instanceof MeshError ? error.message : `failed to start the mesh: ${String(error)}`}\n`,
    );
    process.exit(1);
  }
}
