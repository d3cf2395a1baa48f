import { createFaultProxy, createTestDatabase, type FaultProxy, type TestDatabase } from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSql, isConnectionError, reachesWritablePrimary, type Sql } from "../src/db.js";
import { commitReserveMs, Deadline, withDeadline } from "../src/deadline.js";
import { DomainError } from "../src/errors.js";
import { eventually, sleep } from "./helpers.js";

/**
 * A server that stops answering (SIGSTOP, a paused VM) keeps its connections open and its kernel
 * acknowledges TCP, so neither keepalive nor statement_timeout ends a statement sent to it: the
 * client must give up on it (patches/postgres+3.4.9.patch, the `deadline` option createSql sets).
 * Each pool here reaches the database through two proxies, as a service names a primary and its
 * standby: `frozen` is the first host, and stops forwarding (it keeps every socket open and reads
 * nothing), `promoted` is the second. A pool that gives up its frozen connection connects afresh
 * to the next host, as it would to a promoted standby. The machine's Postgres is never stopped.
 */
let database: TestDatabase;
let admin: postgres.Sql;
let frozen: FaultProxy;
let promoted: FaultProxy;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  admin = postgres(database.url, { max: 1, onnotice: () => {} });
  await admin`create table marks (id text primary key)`;
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

beforeEach(async () => {
  await admin`delete from marks`;
  frozen = await createFaultProxy(database.url);
  promoted = await createFaultProxy(database.url);
  const url = new URL(database.url);
  // One connection: what it is stuck on is all the pool has, as when every connection is stuck.
  sql = createSql(`postgres://${url.username}@127.0.0.1:${frozen.port},127.0.0.1:${promoted.port}${url.pathname}`, {
    schema: "public",
    max: 1,
    applicationName: "frozen-server-test",
  });
  // Connected through the first host, as to the primary before it froze.
  await sql`select 1`;
  expect(frozen.connections).toBe(1);
  expect(promoted.connections).toBe(0);
});

afterEach(async () => {
  // Closing the proxies first resets the frozen connection, so the pool's end does not wait on it.
  await frozen.close();
  await promoted.close();
  await sql.end({ timeout: 1 });
});

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

const marks = async () => (await admin<{ id: string }[]>`select id from marks order by id`).map((row) => row.id);

describe("a server that stops answering", () => {
  it("fails a statement unanswered at its deadline as a lost connection, and the pool's next statement reaches the next host", async () => {
    frozen.stall();
    const error = await failureOf(withDeadline(Deadline.in(500), () => sql`select 1 as one`));
    expect(isConnectionError(error), String(error)).toBe(true);

    // The stuck connection was given up, not pooled again: the next statement connects afresh,
    // to the next host, while the first still answers nothing.
    const [row] = await sql<{ one: number }[]>`select 1 as one`;
    expect(row?.one).toBe(1);
    expect(promoted.connections).toBe(1);
  });

  it("answers a transaction stuck on it deadline_exceeded, applies nothing, and gives its connection up", async () => {
    const error = await failureOf(
      withDeadline(Deadline.in(commitReserveMs + 700), () =>
        sql.begin(async (tx) => {
          await tx`insert into marks values ('stuck')`;
          frozen.stall();
          await tx`insert into marks values ('never answered')`;
        }),
      ),
    );
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).kind).toBe("deadline_exceeded");

    await sql.begin((tx) => tx`insert into marks values ('after')`);
    expect(promoted.connections).toBe(1);
    expect(await marks()).toEqual(["after"]);
  });

  it("answers a COMMIT it never answered as an unknown outcome by the deadline, never a hang", async () => {
    const error = await failureOf(
      withDeadline(Deadline.in(commitReserveMs + 1500), () =>
        sql.begin(async (tx) => {
          await tx`insert into marks values ('committing')`;
          // Frozen between the work and its COMMIT: the COMMIT is sent and never answered.
          frozen.stall();
        }),
      ),
    );
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).kind).toBe("outcome_unknown");

    await sql`insert into marks values ('after')`;
    expect(promoted.connections).toBe(1);
  });

  it("leaves readiness false while the pool's connections are stuck, and true once it has connected afresh", async () => {
    expect(await reachesWritablePrimary(sql, 500)).toBe(true);
    frozen.stall();
    expect(await reachesWritablePrimary(sql, 500)).toBe(false);
    // The probe gives its stuck connection up (a probe sent meanwhile fails with it): then the
    // pool connects to the next host.
    await eventually("readiness again", () => reachesWritablePrimary(sql, 500));
    expect(promoted.connections).toBe(1);
  });

  it("still answers a statement made after its deadline on a server that does answer (a cleanup)", async () => {
    const answered = await withDeadline(Deadline.in(50), async () => {
      await sleep(100);
      return sql<{ one: number }[]>`select 1 as one`;
    });
    expect(answered[0]?.one).toBe(1);
    // Answered on the connection it had: nothing was given up.
    expect(frozen.connections).toBe(1);
    expect(promoted.connections).toBe(0);
  });

  it("leaves a statement outside any deadline to wait for its answer, however slow", async () => {
    // Longer than the second a statement is always given.
    frozen.delay(1200);
    const [row] = await sql<{ one: number }[]>`select 1 as one`;
    expect(row?.one).toBe(1);
    expect(promoted.connections).toBe(0);
  });
});
