import { assertNodeRuntime } from "@affiliate/runtime";
import { resolveInfrastructure } from "./infrastructure.js";

/**
 * Vitest global setup: finds (or starts) Postgres and NATS once per test run and hands their
 * URLs to the test workers through the environment.
 */
export default async function setup(): Promise<() => Promise<void>> {
  // A test run on another Node major stops here with one line, not in some dependency later.
  assertNodeRuntime("tests");
  const infrastructure = await resolveInfrastructure();
  process.env.DATABASE_URL = infrastructure.databaseUrl;
  process.env.NATS_URL = infrastructure.natsUrl;
  return () => infrastructure.stop();
}
