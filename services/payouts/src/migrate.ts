/** Applies the payouts schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadPayoutsConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadPayoutsConfig();
await runMigrations({
  service: "payouts",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
