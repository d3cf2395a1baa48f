import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { defaultDatabaseUrl } from "./infrastructure.js";

export interface TestDatabase {
  /** URL of a database that exists only for this run. */
  url: string;
  drop(): Promise<void>;
}

/** A unique, short, lowercase name for this run's resources. */
export function runId(prefix = "t"): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}

/**
 * Creates an empty database for one test run on the server of DATABASE_URL, so runs never see
 * each other's rows. Migrations are applied by the caller, as each service does at start-up.
 */
export async function createTestDatabase(
  serverUrl = process.env.DATABASE_URL ?? defaultDatabaseUrl,
): Promise<TestDatabase> {
  const name = runId("test");
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await sql.end();
      }
    },
  };
}
