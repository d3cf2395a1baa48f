import { migrationsDirectory, routes } from "@affiliate/notifier/server";
import { createLogger, createSql, errorMapping, migrate, PageTokens, type Sql } from "@affiliate/platform";
import { createTestDatabase } from "@affiliate/testing";
import { createRouterTransport } from "@connectrpc/connect";
import { createGateway, type TestGateway } from "./harness.js";

export interface RealNotifierGateway {
  /** The notifier's schema, for a test that records what its worker would. */
  sql: Sql;
  gateway: TestGateway;
  stop(): Promise<void>;
}

/**
 * A gateway whose notifier is the real one: its routes over an in-memory transport, on a fresh
 * database of their own. `name` labels the pool and the logger.
 */
export async function startRealNotifierGateway(name: string): Promise<RealNotifierGateway> {
  const database = await createTestDatabase();
  const sql = createSql(database.url, { schema: "notifier", max: 4, applicationName: name });
  await migrate(sql, "notifier", migrationsDirectory);
  const logger = createLogger(name, "silent");
  const transport = createRouterTransport(
    routes({ sql, clock: () => new Date(), allowPrivate: false, pageTokens: new PageTokens("test-page-token-secret") }),
    { router: { interceptors: [errorMapping(logger)] } },
  );
  return {
    sql,
    gateway: createGateway({ notifierTransport: transport }),
    async stop() {
      await sql.end();
      await database.drop();
    },
  };
}
