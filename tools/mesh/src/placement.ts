import { createServer } from "node:net";
import type { ServiceDefinition } from "./services.js";
import { services } from "./services.js";

/** One process of a service (a replica) and where it listens. */
export interface Instance {
  /** The service's name for its first instance, `<service>-<n>` for the n-th. */
  name: string;
  service: ServiceDefinition;
  /** The gateway listens on the public host; internal services on loopback only. */
  host: string;
  port: number;
}

export interface PlacementOptions {
  /** The public gateway's host and port (the first gateway's). */
  host: string;
  port: number;
  /** Ports by instance name; see MeshOptions.servicePorts. */
  servicePorts?: Record<string, number> | undefined;
  /** Replicas by service name; 1 when not named. */
  replicas?: Record<string, number> | undefined;
}

/**
 * Every instance of every service, in start order, with its port: the first gateway on the public
 * port, an instance named in `servicePorts` there, a service's first instance on its default
 * port, and a further replica on any free port.
 */
export async function placeInstances(options: PlacementOptions): Promise<Instance[]> {
  const instances: Instance[] = [];
  for (const service of services) {
    for (let n = 1; n <= (options.replicas?.[service.name] ?? 1); n++) {
      const name = n === 1 ? service.name : `${service.name}-${n}`;
      const host = service.protocol === "http" ? options.host : "127.0.0.1";
      const placed = service.protocol === "http" && n === 1 ? options.port : options.servicePorts?.[name];
      const port = placed ?? (n === 1 ? service.defaultPort : await anyFreePort(host));
      instances.push({ name, service, host, port });
    }
  }
  return instances;
}

/** Where callers reach each service, by service name: every replica's URL, comma-separated (see createRpcTransport). */
export function callerUrls(instances: Instance[]): Record<string, string> {
  return Object.fromEntries(
    services.map((service) => [
      service.name,
      instances
        .filter((instance) => instance.service === service)
        .map(({ port }) => `http://127.0.0.1:${port}`)
        .join(","),
    ]),
  );
}

/**
 * An instance's METRICS_PORT: the one asked for, else its service's default while that is free,
 * else any free port (several meshes or replicas on one machine).
 */
export async function metricsPortFor(instance: Instance, requested: number | undefined): Promise<number> {
  if (requested !== undefined) return requested;
  const { defaultMetricsPort } = instance.service;
  return (await portIsFree(defaultMetricsPort, instance.host)) ? defaultMetricsPort : anyFreePort(instance.host);
}

/**
 * Whether nothing listens on the port. Checked before a service starts: otherwise its readiness
 * probe could be answered by whatever holds the port while the service itself dies.
 */
export function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** A port the system just gave out as free. */
export function anyFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
