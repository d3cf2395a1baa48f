/**
 * `npm start`: the whole mesh on one machine, in the foreground. Ctrl-C stops every service.
 * Configuration: DATABASE_URL, NATS_URL, HOST, PORT (contract section 1); <SERVICE>_RPC_PORT
 * (e.g. PARTNERS_RPC_PORT) moves an internal service; anything else in the environment reaches
 * every service.
 */
import { assertNodeRuntime } from "@affiliate/runtime";
import { MeshError, startMesh } from "./mesh.js";
import { services } from "./services.js";

assertNodeRuntime("npm start");

const env = process.env;
const options = {
  databaseUrl: env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  natsUrl: env.NATS_URL ?? "nats://127.0.0.1:4222",
  host: env.HOST ?? "127.0.0.1",
  port: Number(env.PORT ?? 8080),
  servicePorts: Object.fromEntries(
    services.flatMap((s) => {
      const value = env[`${s.name.toUpperCase()}_RPC_PORT`];
      return value ? [[s.name, Number(value)]] : [];
    }),
  ),
};

// Handlers first: a Ctrl-C during start-up must stop what has started, not orphan it.
const startup = new AbortController();
const starting = startMesh({ ...options, output: "inherit", signal: startup.signal });
const shutdown = async (signal: string) => {
  process.stderr.write(`${signal}: stopping the mesh\n`);
  startup.abort();
  // An interrupted start-up stops its own services before it rejects.
  await starting.then((mesh) => mesh.stop()).catch(() => undefined);
  process.exit(0);
};
process.once("SIGINT", () => void shutdown("SIGINT"));
process.once("SIGTERM", () => void shutdown("SIGTERM"));

try {
  const mesh = await starting;
  process.stderr.write(`mesh ready: gateway on ${mesh.gatewayUrl} (Ctrl-C stops it)\n`);
  const { service, code, signal } = await mesh.exited;
  if (startup.signal.aborted) await new Promise(() => {});
  process.stderr.write(`${service} exited unexpectedly (${code ?? signal}); stopping the mesh\n`);
  await mesh.stop();
  process.exit(1);
} catch (error) {
  // An interrupted start-up is reported by the signal handler, which exits.
  if (startup.signal.aborted) await new Promise(() => {});
  process.stderr.write(
    `${error instanceof MeshError ? error.message : `failed to start the mesh: ${String(error)}`}\n`,
  );
  process.exit(1);
}
