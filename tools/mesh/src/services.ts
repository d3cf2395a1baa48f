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
  /** Env other services use to reach it. */
  addressEnv?: (port: number) => Record<string, string>;
  /** "rpc": HTTP/2 cleartext with /readyz; "http": the public HTTP/1.1 gateway. */
  protocol: "rpc" | "http";
  defaultPort: number;
}

/**
 * The services of the mesh in start order: each one's callees start before it. The gateway comes
 * last and is the only public listener.
 */
export const services: ServiceDefinition[] = [
  {
    name: "partners",
    directory: "services/partners",
    migrates: true,
    protocol: "rpc",
    defaultPort: 7101,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (port) => ({ PARTNERS_URL: `http://127.0.0.1:${port}` }),
  },
  {
    name: "ledger",
    directory: "services/ledger",
    migrates: true,
    protocol: "rpc",
    defaultPort: 7102,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (port) => ({ LEDGER_URL: `http://127.0.0.1:${port}` }),
  },
  {
    name: "payouts",
    directory: "services/payouts",
    migrates: true,
    protocol: "rpc",
    defaultPort: 7103,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (port) => ({ PAYOUTS_URL: `http://127.0.0.1:${port}` }),
  },
  {
    name: "notifier",
    directory: "services/notifier",
    migrates: true,
    protocol: "rpc",
    defaultPort: 7105,
    listenEnv: (port, host) => ({ RPC_PORT: String(port), RPC_HOST: host }),
    addressEnv: (port) => ({ NOTIFIER_URL: `http://127.0.0.1:${port}` }),
  },
  {
    name: "gateway",
    directory: "services/gateway",
    migrates: false,
    protocol: "http",
    defaultPort: 8080,
    listenEnv: (port, host) => ({ PORT: String(port), HOST: host }),
  },
];
