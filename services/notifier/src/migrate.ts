/** Applies the notifier schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadNotifierConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadNotifierConfig();
await runMigrations({
  service: "notifier",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
