/** Applies the payouts schema's migrations and exits: `npm run migrate`, or a Kubernetes Job. */
import { createLogger, createSql, migrate } from "@affiliate/platform";
import { loadPayoutsConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadPayoutsConfig();
const logger = createLogger("payouts-migrate", config.LOG_LEVEL);
const sql = createSql(config.DATABASE_URL, { schema, max: 1, applicationName: "payouts-migrate" });
try {
  const { applied } = await migrate(sql, schema, migrationsDirectory);
  logger.info({ applied }, applied.length ? "migrations applied" : "schema up to date");
} catch (error) {
  logger.error({ err: error }, "migration failed");
  process.exitCode = 1;
} finally {
  await sql.end();
}
