import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tools/mesh/dist -> ../../..). */
export const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export interface ServiceDefinition {
  name: string;
  directory: string;
  /** Whether the service owns a schema and ships `dist/migrate.js`. */
  migrates: boolean;
  /** Env naming where the service listens, given its port. */
  listenEnv(port: number, host: string): Record<string, string>;
  /** Env other services use to reach it, given its URL (or its replicas' URLs, comma-separated). */
  addressEnv?: (url: string) => Record<string, string>;
  /** "rpc": HTTP/2 cleartext with /readyz; "http": the public HTTP/1.1 gateway. */
  protocol: "rpc" | "http";
  defaultPort: number;
  /** Where its Prometheus metrics are served (METRICS_PORT): 91xx for an RPC service on 71xx. */
  defaultMetricsPort: number;
}

/**
 * An internal service in `services/<name>`: it owns a schema, listens for RPC on `RPC_PORT`,
 * and its callers find it at `<NAME>_URL`.
 */
function rpcService(name: string, defaultPort: number, defaultMetricsPort: number): ServiceDefinition {
  return {
    name,
    directory: `services/${name}`,
    migrates: true,
    protocol: "rpc",
    defaultPort,
    defaultMetricsPort,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (url) => ({ [urlVariable(name)]: url }),
  };
}

/**
 * The services of the mesh in start order: each one's callees start before it. The gateway comes
 * last and is the only public listener. A new service is one line here.
 */
export const services: ServiceDefinition[] = [
  rpcService("partners", 7101, 9101),
  rpcService("ledger", 7102, 9102),
  rpcService("payouts", 7103, 9103),
  rpcService("notifier", 7105, 9105),
  rpcService("privacy", 7104, 9104),
  {
    name: "gateway",
    directory: "services/gateway",
    migrates: false,
    protocol: "http",
    defaultPort: 8080,
    defaultMetricsPort: 9080,
    listenEnv: (port, host) => ({ PORT: String(port), HOST: host }),
  },
];

/** The variable that moves a service's port under `npm start`: `PORT` for the gateway, else `<NAME>_RPC_PORT`. */
export function portVariable(service: ServiceDefinition): string {
  return service.protocol === "http" ? "PORT" : `${service.name.toUpperCase()}_RPC_PORT`;
}

/** The variable that moves a service's metrics under `npm start`: `<NAME>_METRICS_PORT`. */
export function metricsPortVariable(service: ServiceDefinition): string {
  return `${service.name.toUpperCase()}_METRICS_PORT`;
}

/** The variable callers read to reach an internal service: `<NAME>_URL`. */
export function urlVariable(name: string): string {
  return `${name.toUpperCase()}_URL`;
}

/**
 * Where a tool on this machine (the operator CLI) reaches an internal service, from the same
 * variables `npm start` reads: `<NAME>_URL`, else `<NAME>_RPC_PORT` on 127.0.0.1, else its default
 * port.
 */
export function serviceUrl(name: string, env: NodeJS.ProcessEnv): string {
  const service = services.find((s) => s.name === name && s.protocol === "rpc");
  if (!service) throw new Error(`no internal service named ${name}`);
  return env[urlVariable(name)] || `http://127.0.0.1:${env[portVariable(service)] || service.defaultPort}`;
}
