/**
 * How the pool carries totals (contract section 11): sums reach the code as exact bigints, and
 * json parameters keep bigints exact, so a stored webhook body says what the API said.
 */
import { createTestDatabase, type TestDatabase } from "@affiliate/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";

let database: TestDatabase;
let sql: Sql;
beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema: "public", applicationName: "platform-db-totals-test", max: 2 });
});
afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

it("reads a sum of int8 (numeric) as an exact bigint, past 2^53", async () => {
  const [row] = await sql<{ total: bigint; count: number }[]>`
    select sum(x) as total, count(*)::int8 as count
    from (values (9007199254740993::int8), (9007199254740993::int8), (-1::int8)) as t (x)`;
  expect(row).toEqual({ total: 18_014_398_509_481_985n, count: 3 });
});

it("refuses a single int8 past 2^53 rather than rounding it, and a fractional numeric", async () => {
  await expect(sql`select 9007199254740993::int8 as x`).rejects.toThrow(RangeError);
  await expect(sql`select 1.5::numeric as x`).rejects.toThrow(RangeError);
});

it("writes a bigint inside a json parameter digit for digit", async () => {
  const [row] = await sql<{ text: string }[]>`
    select (${sql.json({ amount_cents: 9_223_372_036_854_775_807n, n: 1 } as never)}::jsonb)::text as text`;
  expect(row?.text).toBe('{"n": 1, "amount_cents": 9223372036854775807}');
});
