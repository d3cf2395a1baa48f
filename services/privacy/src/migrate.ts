/** Applies the privacy schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadPrivacyConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadPrivacyConfig();
await runMigrations({
  service: "privacy",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
