import { readFileSync } from "node:fs";
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

/** One entry of deploy/services.json: the list of services that the launcher, the image builds and the manifests' checks share. */
export interface ServiceEntry {
  name: string;
  /** The npm workspace, e.g. `@affiliate/ledger`. */
  workspace: string;
  directory: string;
  protocol: "rpc" | "http";
  /** The RPC port (71xx), or the gateway's public port. */
  port: number;
  metricsPort: number;
  /** The image name the manifests use (kustomize replaces it with the registry's). */
  image: string;
  /** The Postgres schema it owns, or null. */
  schema: string | null;
  /** The keys it reads from the Secret affiliate-secrets. */
  secrets: string[];
  /** The services it calls: the `<NAME>_URL` settings of its config (deploy/validate.mjs holds them equal). */
  calls: string[];
}

/** Where the list lives, read once when the launcher starts. */
export const serviceListFile = join(repositoryRoot, "deploy", "services.json");

/** The entries of deploy/services.json, in start order. */
export const serviceEntries: ServiceEntry[] = JSON.parse(readFileSync(serviceListFile, "utf8")).services;

/**
 * The launcher's view of an entry. An internal service listens for RPC on `RPC_PORT` and its
 * callers find it at `<NAME>_URL`; the gateway listens on `PORT` and `HOST`.
 */
function definitionOf(entry: ServiceEntry): ServiceDefinition {
  const common = {
    name: entry.name,
    directory: entry.directory,
    migrates: entry.schema !== null,
    protocol: entry.protocol,
    defaultPort: entry.port,
    defaultMetricsPort: entry.metricsPort,
  };
  if (entry.protocol === "http") {
    return { ...common, listenEnv: (port, host) => ({ PORT: String(port), HOST: host }) };
  }
  return {
    ...common,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (url) => ({ [urlVariable(entry.name)]: url }),
  };
}

/**
 * The services of the mesh in start order: each one's callees start before it. The gateway comes
 * last and is the only public listener. A new service is one entry in deploy/services.json.
 */
export const services: ServiceDefinition[] = serviceEntries.map(definitionOf);

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
