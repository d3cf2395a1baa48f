import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";
import { migrate } from "../src/migrate.js";
import { migrationsDirectory } from "./helpers.js";

/** The platform's own migrations, applied before every service's, in this order. */
const platformFiles = [
  "platform/0001_outbox.sql",
  "platform/0002_applied_events_by_age.sql",
  "platform/0003_job_notify.sql",
  "platform/0004_erasure_counts.sql",
  "platform/0011_wake_without_notify.sql",
  "platform/0070_autovacuum_hot_tables.sql",
];

let database: TestDatabase;
let sql: Sql;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema: "public", applicationName: "platform-migrate-test", max: 4 });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

let schemaCounter = 0;
/** A schema of its own for each test. */
const newSchema = () => `svc_${++schemaCounter}`;

async function directory(files: Record<string, string>) {
  const dir = await migrationsDirectory(files);
  cleanups.push(dir.remove);
  return dir;
}

async function tablesIn(schema: string): Promise<string[]> {
  const rows = await sql<{ tableName: string }[]>`
    select table_name from information_schema.tables where table_schema = ${schema} order by table_name`;
  return rows.map((row) => row.tableName);
}

async function recorded(schema: string): Promise<{ name: string; checksum: string }[]> {
  return sql.unsafe(`select name, checksum from "${schema}".schema_migrations order by name`);
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("migrate", () => {
  it("refuses a .sql file whose name does not follow 0001_snake_case.sql, instead of skipping it", async () => {
    const schema = newSchema();
    const dir = await directory({
      "0001_widgets.sql": "create table widgets (id text);",
      "0002_AddColumn.sql": "select 1;",
    });
    await expect(migrate(sql, schema, dir.path)).rejects.toThrow("0002_AddColumn.sql");
    expect(await tablesIn(schema)).toEqual([]);
  });

  it("applies the platform's migrations, then the service's in order, into the schema", async () => {
    const schema = newSchema();
    const files = {
      // Written out of order: the numbers decide.
      "0002_add_note.sql": "alter table widgets add column note text not null default '';",
      "0001_widgets.sql": "create table widgets (id text primary key);\ncreate index widgets_id on widgets (id);",
      "README.md": "not a migration",
    };
    const dir = await directory(files);

    const result = await migrate(sql, schema, dir.path);

    expect(result).toEqual({ applied: [...platformFiles, "0001_widgets.sql", "0002_add_note.sql"] });
    expect(await tablesIn(schema)).toEqual([
      "applied_events",
      "erasure_counts",
      "outbox",
      "schema_migrations",
      "widgets",
    ]);
    // Unqualified names land in the service's schema, never in public.
    expect(await tablesIn("public")).toEqual([]);
    const platformRecords = await Promise.all(
      platformFiles.map(async (name) => ({
        name,
        checksum: sha256(
          await readFile(
            fileURLToPath(new URL(`../migrations/${name.slice("platform/".length)}`, import.meta.url)),
            "utf8",
          ),
        ),
      })),
    );
    expect(await recorded(schema)).toEqual([
      { name: "0001_widgets.sql", checksum: sha256(files["0001_widgets.sql"]) },
      { name: "0002_add_note.sql", checksum: sha256(files["0002_add_note.sql"]) },
      ...platformRecords,
    ]);
    const columns = await sql<{ columnName: string }[]>`
      select column_name from information_schema.columns
      where table_schema = ${schema} and table_name = 'widgets' order by ordinal_position`;
    expect(columns.map((column) => column.columnName)).toEqual(["id", "note"]);
  });

  it("gives the platform's hot tables their own autovacuum settings (production runs autovacuum)", async () => {
    const schema = newSchema();
    const dir = await directory({});
    await migrate(sql, schema, dir.path);
    const rows = await sql<{ relname: string; reloptions: string[] }[]>`
      select c.relname, c.reloptions from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relname in ('outbox', 'applied_events') order by c.relname`;
    expect(rows).toEqual([
      { relname: "applied_events", reloptions: expect.arrayContaining(["autovacuum_vacuum_scale_factor=0.05"]) },
      {
        relname: "outbox",
        reloptions: expect.arrayContaining(["autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000"]),
      },
    ]);
  });

  it("applies nothing when run again", async () => {
    const schema = newSchema();
    const dir = await directory({
      "0001_counter.sql": "create table counter (n int not null);\ninsert into counter values (1);",
    });
    expect((await migrate(sql, schema, dir.path)).applied).toEqual([...platformFiles, "0001_counter.sql"]);

    expect(await migrate(sql, schema, dir.path)).toEqual({ applied: [] });
    expect(await sql.unsafe(`select n from "${schema}".counter`)).toEqual([{ n: 1 }]);
    expect((await recorded(schema)).map((row) => row.name)).toEqual(["0001_counter.sql", ...platformFiles]);

    // A new file is applied on its own.
    await dir.write("0002_more.sql", "insert into counter values (2);");
    expect(await migrate(sql, schema, dir.path)).toEqual({ applied: ["0002_more.sql"] });
    expect(await sql.unsafe(`select n from "${schema}".counter order by n`)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it("applies each file once when two runs race on one schema", async () => {
    const schema = newSchema();
    const dir = await directory({
      // Not idempotent: a second application would fail or add a row.
      "0001_counter.sql": "create table counter (n int not null);",
      "0002_row.sql": "insert into counter values (1);",
    });
    // Two pools, as two replicas starting at once would have.
    const other = createSql(database.url, { schema: "public", applicationName: "platform-migrate-test-2", max: 2 });
    cleanups.push(() => other.end());

    const results = await Promise.all([migrate(sql, schema, dir.path), migrate(other, schema, dir.path)]);

    const everything = [...platformFiles, "0001_counter.sql", "0002_row.sql"];
    expect(results.flatMap((result) => result.applied).sort()).toEqual([...everything].sort());
    // The advisory lock serialises whole runs: one applies everything, the other nothing.
    expect(results.map((result) => result.applied.length).sort()).toEqual([0, everything.length]);
    expect(await sql.unsafe(`select n from "${schema}".counter`)).toEqual([{ n: 1 }]);
    expect(await recorded(schema)).toHaveLength(everything.length);
  });

  it("refuses to run when an applied file changed, and applies nothing of that run", async () => {
    const schema = newSchema();
    const dir = await directory({
      "0001_a.sql": "create table a (id int);",
      "0003_c.sql": "create table c (id int);",
    });
    await migrate(sql, schema, dir.path);
    const before = await recorded(schema);

    // A new file that sorts before the edited one: it would run first, and must not stay.
    await dir.write("0002_b.sql", "create table b (id int);");
    await dir.write("0003_c.sql", "create table c (id int, extra text);");

    await expect(migrate(sql, schema, dir.path)).rejects.toThrow(
      `migration ${schema}/0003_c.sql changed after it was applied; add a new migration instead`,
    );
    expect(await tablesIn(schema)).toEqual([
      "a",
      "applied_events",
      "c",
      "erasure_counts",
      "outbox",
      "schema_migrations",
    ]);
    expect(await recorded(schema)).toEqual(before);
    const columns = await sql`
      select column_name from information_schema.columns where table_schema = ${schema} and table_name = 'c'`;
    expect(columns).toHaveLength(1);
  });

  it("leaves nothing of a run whose migration fails", async () => {
    const schema = newSchema();
    const dir = await directory({ "0001_a.sql": "create table a (id int);" });
    await migrate(sql, schema, dir.path);
    const before = await recorded(schema);

    await dir.write("0002_b.sql", "create table b (id int);\ninsert into a values (1);");
    await dir.write("0003_c.sql", "create table c (id int);");
    await dir.write("0004_bad.sql", "create table d (id int);\nselect * from no_such_table;");

    await expect(migrate(sql, schema, dir.path)).rejects.toThrow(/no_such_table/);
    expect(await tablesIn(schema)).toEqual(["a", "applied_events", "erasure_counts", "outbox", "schema_migrations"]);
    expect(await sql.unsafe(`select count(*)::int as count from "${schema}".a`)).toEqual([{ count: 0 }]);
    expect(await recorded(schema)).toEqual(before);

    // Once fixed, the whole run applies.
    await dir.write("0004_bad.sql", "create table d (id int);");
    expect(await migrate(sql, schema, dir.path)).toEqual({ applied: ["0002_b.sql", "0003_c.sql", "0004_bad.sql"] });
    expect(await tablesIn(schema)).toEqual([
      "a",
      "applied_events",
      "b",
      "c",
      "d",
      "erasure_counts",
      "outbox",
      "schema_migrations",
    ]);
  });

  it("leaves not even the schema when the first run of a fresh schema fails", async () => {
    const schema = newSchema();
    const dir = await directory({
      "0001_a.sql": "create table a (id int);",
      "0002_bad.sql": "create tabel b (id int);",
    });

    await expect(migrate(sql, schema, dir.path)).rejects.toThrow(/syntax error/);
    expect(await sql`select 1 from information_schema.schemata where schema_name = ${schema}`).toHaveLength(0);
  });
});
