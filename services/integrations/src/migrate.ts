/** Applies the integrations schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadIntegrationsConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadIntegrationsConfig();
await runMigrations({
  service: "integrations",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
