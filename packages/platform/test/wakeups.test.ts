import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";
import { migrate } from "../src/migrate.js";
import { onWake, wakeAfterCommit } from "../src/wakeups.js";
import { migrationsDirectory } from "./helpers.js";

// Issue 28: workers are woken after the commit of the work they are given, without NOTIFY.

let database: TestDatabase;
let sql: Sql;
const schema = "wakes";

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema, applicationName: "wakeups-test", max: 4 });
  const dir = await migrationsDirectory({ "0001_things.sql": "create table things (id text primary key);" });
  await migrate(sql, schema, dir.path);
  await dir.remove();
});
afterAll(async () => {
  await sql.end();
  await database.drop();
});

/** Subscribes to `schema.table` for one test; each wake-up reads how many `things` another connection sees. */
function subscriber(table: string, schemaName = schema) {
  const seen: Promise<number>[] = [];
  const stop = onWake(schemaName, table, () => {
    seen.push(sql<{ n: number }[]>`select count(*)::int as n from things`.then(([row]) => row?.n ?? -1));
  });
  return { seen, stop };
}

describe("wakeAfterCommit", () => {
  it("wakes the table's subscribers once the transaction has committed, once per transaction", async () => {
    await sql`delete from things`;
    const { seen, stop } = subscriber("things");
    try {
      await sql.begin(async (tx) => {
        await tx`insert into things (id) values ('a')`;
        wakeAfterCommit("things");
        await tx`insert into things (id) values ('b')`;
        wakeAfterCommit("things");
        expect(seen).toHaveLength(0);
      });
      expect(seen).toHaveLength(1);
      // The wake-up came after the commit: another connection already saw both rows.
      expect(await Promise.all(seen)).toEqual([2]);
    } finally {
      stop();
    }
  });

  it("wakes no one after a rollback", async () => {
    const { seen, stop } = subscriber("things");
    try {
      const failed = sql.begin(async (tx) => {
        await tx`insert into things (id) values ('rolled-back')`;
        wakeAfterCommit("things");
        throw new Error("rolled back");
      });
      await expect(failed).rejects.toThrow("rolled back");
      const conflict = sql.begin(async (tx) => {
        wakeAfterCommit("things");
        await tx`insert into things (id) values ('a')`; // a duplicate key: the commit never happens
      });
      await expect(conflict).rejects.toThrow(/duplicate key/);
      expect(seen).toHaveLength(0);
    } finally {
      stop();
    }
  });

  it("wakes only the subscribers of the table and schema the transaction named", async () => {
    const things = subscriber("things");
    const others = subscriber("others");
    const elsewhere = subscriber("things", "another_schema");
    try {
      await sql.begin(async (tx) => {
        await tx`insert into things (id) values (${`c-${Date.now()}`})`;
        wakeAfterCommit("things");
      });
      expect([things.seen.length, others.seen.length, elsewhere.seen.length]).toEqual([1, 0, 0]);
    } finally {
      things.stop();
      others.stop();
      elsewhere.stop();
    }
  });

  it("outside a transaction (the statement committed already), wakes the table's subscribers at once", async () => {
    const { seen, stop } = subscriber("things");
    try {
      await sql`insert into things (id) values (${`d-${Date.now()}`})`;
      wakeAfterCommit("things");
      expect(seen).toHaveLength(1);
    } finally {
      stop();
    }
  });

  it("a stopped subscription is not woken", async () => {
    const { seen, stop } = subscriber("things");
    stop();
    await sql.begin(async (tx) => {
      await tx`insert into things (id) values (${`e-${Date.now()}`})`;
      wakeAfterCommit("things");
    });
    expect(seen).toHaveLength(0);
  });
});
