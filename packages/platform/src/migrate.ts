import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSql, type Sql } from "./db.js";
import { createLogger } from "./logger.js";
import { retryStartup } from "./startup.js";

export interface MigrationResult {
  applied: string[];
}

const migrationFile = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** The platform's own tables (outbox, applied events), applied before every service's. */
const platformMigrations = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

async function migrationsIn(directory: string, prefix: string) {
  const sqlFiles = (await readdir(directory)).filter((name) => name.endsWith(".sql"));
  const misnamed = sqlFiles.filter((name) => !migrationFile.test(name));
  // A misnamed file would otherwise be skipped silently and never applied.
  if (misnamed.length > 0) throw new Error(`migration files must be named 0001_snake_case.sql: ${misnamed.join(", ")}`);
  const names = sqlFiles.sort();
  return names.map((name) => ({ id: `${prefix}${name}`, path: join(directory, name) }));
}

/**
 * Applies the platform's migrations and then the forward-only SQL migrations in `directory`
 * (files `0001_name.sql`, in order) to `schema`, all in one transaction (a failing migration
 * leaves nothing half-applied), recording name and checksum in
 * `<schema>.schema_migrations`. Safe to run from several replicas at once: an advisory lock per
 * schema serialises them. An applied migration whose file changed stops the run: history is
 * never rewritten, a fix is a new migration.
 */
export async function migrate(sql: Sql, schema: string, directory: string): Promise<MigrationResult> {
  const files = [...(await migrationsIn(platformMigrations, "platform/")), ...(await migrationsIn(directory, ""))];
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`migrate:${schema}`}))`;
    await tx.unsafe(`create schema if not exists "${schema}"`);
    await tx.unsafe(`create table if not exists "${schema}".schema_migrations (
      name text primary key,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`);
    const done = new Map<string, string>();
    for (const row of await tx.unsafe(`select name, checksum from "${schema}".schema_migrations`)) {
      done.set(row.name as string, row.checksum as string);
    }
    for (const { id: name, path } of files) {
      const text = await readFile(path, "utf8");
      const checksum = createHash("sha256").update(text).digest("hex");
      const previous = done.get(name);
      if (previous !== undefined) {
        if (previous !== checksum) {
          throw new Error(`migration ${schema}/${name} changed after it was applied; add a new migration instead`);
        }
        continue;
      }
      await tx.savepoint(async (step) => {
        await step.unsafe(`set local search_path to "${schema}"`);
        await step.unsafe(text);
        await step.unsafe(`insert into "${schema}".schema_migrations (name, checksum) values ($1, $2)`, [
          name,
          checksum,
        ]);
      });
      applied.push(name);
    }
  });
  return { applied };
}

/**
 * The body of every service's `migrate.ts` (`npm run migrate`, a Kubernetes init container):
 * applies the schema's migrations, logs what it did, and sets a failing exit code on error.
 */
export async function runMigrations(options: {
  service: string;
  schema: string;
  directory: string;
  databaseUrl: string;
  logLevel: string;
}): Promise<void> {
  const name = `${options.service}-migrate`;
  const logger = createLogger(name, options.logLevel);
  const sql = createSql(options.databaseUrl, { schema: options.schema, max: 1, applicationName: name });
  try {
    // A Postgres still starting (refusing, or answering 57P03 "starting up") is waited for.
    const { applied } = await retryStartup(logger, "applying migrations", () =>
      migrate(sql, options.schema, options.directory),
    );
    logger.info({ applied }, applied.length ? "migrations applied" : "schema up to date");
  } catch (error) {
    logger.error({ err: error }, "migration failed");
    process.exitCode = 1;
  } finally {
    await sql.end();
  }
}
