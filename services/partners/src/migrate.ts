/** Applies the partners schema's migrations and exits: `npm run migrate`, or a Kubernetes init container. */
import { runMigrations } from "@affiliate/platform";
import { loadPartnersConfig } from "./config.js";
import { migrationsDirectory, schema } from "./server.js";

const config = loadPartnersConfig();
await runMigrations({
  service: "partners",
  schema,
  directory: migrationsDirectory,
  databaseUrl: config.DATABASE_URL,
  logLevel: config.LOG_LEVEL,
});
