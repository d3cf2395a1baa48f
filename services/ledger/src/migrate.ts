/** Applies the ledger schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadLedgerConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadLedgerConfig();
await runMigrations({
  service: "ledger",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
