import {
  createLogger,
  createSql,
  errorMapping,
  migrate,
  PageTokens,
  type SealingKey,
  type Sql,
} from "@affiliate/platform";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { migrationsDirectory, routes, schema } from "../src/server.js";

export interface Harness {
  sql: Sql;
  partners: ReturnType<typeof createClient<typeof PartnersService>>;
  admin: ReturnType<typeof createClient<typeof PartnersAdminService>>;
  database: TestDatabase;
  close(): Promise<void>;
}

/**
 * Clients of the partners service on `sql` over an in-memory transport; errors are mapped by the
 * same interceptor as in production. Sign-in answers without a floor unless `loginAnswerFloorMs`
 * says otherwise: only the timing tests wait for it. Payout details are sealed under the
 * development key unless `payoutSealing` is given.
 */
export function serviceClients(
  sql: Sql,
  { loginAnswerFloorMs = 0, payoutSealing }: { loginAnswerFloorMs?: number; payoutSealing?: SealingKey } = {},
) {
  const transport = createRouterTransport(
    routes({ sql, pageTokens: new PageTokens("test-page-token-secret"), loginAnswerFloorMs, payoutSealing }),
    {
      router: { interceptors: [errorMapping(createLogger("partners-test", "silent"))] },
    },
  );
  return { partners: createClient(PartnersService, transport), admin: createClient(PartnersAdminService, transport) };
}

/** The partners service over an in-memory transport, on a fresh, migrated database of its own. */
export async function startHarness(): Promise<Harness> {
  const database = await createTestDatabase();
  const sql = createSql(database.url, { schema, max: 5, applicationName: "partners-test" });
  await migrate(sql, schema, migrationsDirectory);
  return {
    sql,
    database,
    ...serviceClients(sql),
    async close() {
      await sql.end();
      await database.drop();
    },
  };
}

let counter = 0;
/** A unique email for this run. */
export const uniqueEmail = (tag = "aff") => `${tag}-${Date.now().toString(36)}-${++counter}@example.com`;

/** The `count` column of a single-row query such as `select count(*)::int as count …`. */
export async function countOf(rows: Promise<readonly { count?: unknown }[]>): Promise<number> {
  const [row] = await rows;
  return Number(row?.count);
}
