import type { Mesh } from "@affiliate/mesh";
import { PartnersAdminService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Sql } from "postgres";
import type { BenchConfig } from "./config.js";
import type { ProcessSet } from "./cpu.js";
import type { HttpClient } from "./http.js";
import type { DatabaseProbe } from "./load.js";

export interface Product {
  productId: string;
  /** sk_live_…: the only key the measured routes accept. */
  liveKey: string;
}

/** What every section gets from main: the running mesh and handles onto it. */
export interface BenchContext {
  config: BenchConfig;
  mesh: Mesh;
  /** The run's database, schema-qualified access (partners.*, ledger.*, public scratch tables). */
  sql: Sql;
  databaseUrl: string;
  /** One kept-alive connection to the gateway, for sequential timing and set-up calls. */
  gateway: HttpClient;
  createProduct(name: string): Promise<Product>;
  /**
   * The processes whose CPU a load case meters: the mesh's services, the run database's
   * Postgres backends, this process (the load generator) and any `extra` (reference servers).
   */
  processes(extra?: Record<string, number>): ProcessSet;
  /** Lock waits and deadlocks of the run's database, sampled during load. */
  database: DatabaseProbe;
  /** Registers clean-up that must run even when the section or the run fails. */
  onTeardown(step: () => Promise<void>): void;
}

/** Products are created as an operator does (`admin products create`): PartnersAdminService over HTTP/2. */
export function productFactory(partnersUrl: string): (name: string) => Promise<Product> {
  const admin = createClient(
    PartnersAdminService,
    createConnectTransport({ baseUrl: partnersUrl, httpVersion: "2", useBinaryFormat: true, defaultTimeoutMs: 10_000 }),
  );
  return async (name) => {
    const { product, keys } = await admin.createProduct({ name });
    if (!product?.id || !keys?.secretKey) throw new Error("CreateProduct answered without a product or keys");
    return { productId: product.id, liveKey: keys.secretKey };
  };
}

/**
 * Whether the gateway serves a route: an unknown route gets the gateway's own 404 "Route not
 * found", while a known one answers anything else (400 for the empty body, 200, …).
 */
export async function gatewayHasRoute(gateway: HttpClient, method: string, path: string, key: string) {
  const res = await gateway.request(path, {
    method,
    headers: { "x-api-key": key },
    ...(method === "GET" ? {} : { body: {} }),
  });
  return !(res.status === 404 && res.body.includes("Route not found"));
}

/** Pids of the Postgres backends connected to the run's database, as one group. */
export function processSet(mesh: Mesh, sql: Sql): (extra?: Record<string, number>) => ProcessSet {
  return (extra = {}) =>
    async () => {
      const backends = await sql<{ pid: number }[]>`
        select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
      return {
        ...Object.fromEntries(Object.entries(mesh.pids).map(([name, pid]) => [name, [pid]])),
        ...Object.fromEntries(Object.entries(extra).map(([name, pid]) => [name, [pid]])),
        postgres: backends.map((row) => row.pid),
        "load generator": [process.pid],
      };
    };
}

/** Samples pg_stat_activity and pg_stat_database of the run's database. */
export function databaseProbe(sql: Sql): DatabaseProbe {
  return {
    async activity() {
      const rows = await sql<{ wait: string; count: number }[]>`
        select coalesce(wait_event_type || ':' || wait_event, 'CPU') as wait, count(*)::int as count
        from pg_stat_activity
        where datname = current_database() and state = 'active' and pid <> pg_backend_pid()
        group by 1`;
      const waits = Object.fromEntries(rows.map(({ wait, count }) => [wait, count]));
      const active = rows.reduce((sum, { count }) => sum + count, 0);
      const lockWaits = rows.filter(({ wait }) => wait.startsWith("Lock:")).reduce((sum, { count }) => sum + count, 0);
      return { active, lockWaits, waits };
    },
    async deadlocks() {
      // pg_stat_database is a snapshot per transaction; clear it so each read is current.
      await sql`select pg_stat_clear_snapshot()`;
      const [row] = await sql<{ deadlocks: string }[]>`
        select deadlocks from pg_stat_database where datname = current_database()`;
      return Number(row?.deadlocks ?? 0);
    },
  };
}
