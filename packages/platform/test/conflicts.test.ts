import {
  createTestDatabase,
  createTestNamespace,
  parseMetrics,
  refuseWrites,
  settlePool,
  type TestDatabase,
  type TestNamespace,
} from "@affiliate/testing";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSql, reachesWritablePrimary, type Sql } from "../src/db.js";
import { Deadline, withDeadline } from "../src/deadline.js";
import { DomainError } from "../src/errors.js";
import { connectNats, ensureStream, streamName } from "../src/events.js";
import { collectMetrics } from "../src/metrics.js";

/**
 * Contention is never a failure the caller cannot act on: a transaction Postgres aborts to end a
 * deadlock or a serialization conflict, or one that met a read-only server (a failover), is run
 * again by the transaction helper within the caller's deadline, and counted.
 */
let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema: "public", applicationName: "conflicts-test" });
  await sql`create table balances (id text primary key, cents bigint not null)`;
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

beforeEach(async () => {
  await sql`delete from balances`;
  await sql`insert into balances values ('a', 1000), ('b', 1000)`;
});

async function conflictsCounted(code: string): Promise<number> {
  const samples = parseMetrics(await collectMetrics());
  return (
    samples.find((sample) => sample.name === "db_transaction_conflicts_total" && sample.labels.code === code)?.value ??
    0
  );
}

const balances = async () =>
  Object.fromEntries(
    (await sql<{ id: string; cents: number }[]>`select id, cents from balances`).map((r) => [r.id, r.cents]),
  );

/** Resolves for everyone once `parties` have arrived: the two sides of a deadlock meet here. */
function meetingPoint(parties: number) {
  let arrived = 0;
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return async () => {
    if (++arrived === parties) open();
    await opened;
  };
}

describe("the transaction helper under contention", () => {
  it("runs again the side of a deadlock Postgres aborted: both transfers apply, once each", async () => {
    const before = await conflictsCounted("40P01");
    const meet = meetingPoint(2);
    const attempts = { ab: 0, ba: 0 };
    // Each locks its first row, waits for the other to hold its own, then asks for the other's.
    const transfer = (from: "a" | "b", to: "a" | "b", name: "ab" | "ba") =>
      sql.begin(async (tx) => {
        attempts[name] += 1;
        await tx`update balances set cents = cents - 100 where id = ${from}`;
        await meet();
        await tx`update balances set cents = cents + 100 where id = ${to}`;
      });
    // Both inside an RPC's deadline, as a service runs them.
    await withDeadline(Deadline.in(10_000), () => Promise.all([transfer("a", "b", "ab"), transfer("b", "a", "ba")]));

    expect(await balances()).toEqual({ a: 1000, b: 1000 });
    expect(attempts.ab + attempts.ba).toBe(3);
    expect(await conflictsCounted("40P01")).toBe(before + 1);
  });

  it("runs again a serializable transaction that lost a serialization conflict", async () => {
    const before = await conflictsCounted("40001");
    const meet = meetingPoint(2);
    let attempts = 0;
    // Both read the total and write from it: serializable lets only one of them commit first.
    const credit = (id: string) =>
      sql.begin("isolation level serializable", async (tx) => {
        attempts += 1;
        const [row] = await tx<{ total: number }[]>`select sum(cents)::int8 as total from balances`;
        await meet();
        await tx`update balances set cents = ${(row?.total ?? 0) / 20} where id = ${id}`;
      });
    await Promise.all([credit("a"), credit("b")]);

    expect(attempts).toBe(3);
    // The one run again read what the first committed: 2000 / 20 = 100, then (100 + 1000) / 20 = 55.
    expect(Object.values(await balances()).sort((x, y) => x - y)).toEqual([55, 100]);
    expect(await conflictsCounted("40001")).toBe(before + 1);
  });

  it("gives up when the deadline leaves no time for another attempt: deadline exceeded, nothing applied", async () => {
    // A session that refuses every write (25006), as a server that is not the primary does.
    const readOnly = createSql(`${database.url}?default_transaction_read_only=on`, {
      schema: "public",
      applicationName: "conflicts-test-read-only",
    });
    try {
      const before = await conflictsCounted("25006");
      let attempts = 0;
      const failure = await withDeadline(Deadline.in(1500), () =>
        readOnly.begin(async (tx) => {
          attempts += 1;
          await tx`update balances set cents = 0 where id = 'a'`;
        }),
      ).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(DomainError);
      expect((failure as DomainError).kind).toBe("deadline_exceeded");
      expect(attempts).toBeGreaterThan(1);
      // Each refused attempt is counted; the last one may instead be cut short by the deadline
      // (each attempt waits for a new connection, the refused one being closed).
      const counted = (await conflictsCounted("25006")) - before;
      expect(counted).toBeGreaterThanOrEqual(attempts - 1);
      expect(counted).toBeLessThanOrEqual(attempts);
      expect(await balances()).toEqual({ a: 1000, b: 1000 });
    } finally {
      await readOnly.end();
    }
  });

  it("does not run again a transaction that failed for another reason", async () => {
    let attempts = 0;
    const failure = await sql
      .begin(async (tx) => {
        attempts += 1;
        await tx`insert into balances values ('a', 1)`;
      })
      .catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe("23505");
    expect(attempts).toBe(1);
  });
});

/** Resolves once `count` returns more than `than`, polling (the refusal to wait for has happened). */
async function countedPast(code: string, than: number): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  while ((await conflictsCounted(code)) <= than) {
    if (Date.now() > giveUpAt) throw new Error(`no ${code} counted within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a server that refuses writes, as an old primary turned standby does (issue 34)", () => {
  it("sends a statement made outside a transaction again on a new connection: applied once the primary is back", async () => {
    const refusal = await refuseWrites(database.url);
    try {
      await settlePool(sql, 10);
      const before = await conflictsCounted("25006");
      const update = withDeadline(
        Deadline.in(15_000),
        async () => await sql`update balances set cents = cents + 1 where id = 'a' returning cents`,
      );
      await countedPast("25006", before);
      await refusal.restore();
      // Every pooled session is still read-only: only the refused ones being closed lets it through.
      expect((await update).map((row) => row.cents)).toEqual([1001]);
    } finally {
      await refusal.restore();
    }
    expect(await balances()).toEqual({ a: 1001, b: 1000 });
  });

  it("runs a transaction again on a new connection: applied once the primary is back", async () => {
    const refusal = await refuseWrites(database.url);
    let attempts = 0;
    try {
      await settlePool(sql, 10);
      const before = await conflictsCounted("25006");
      const transfer = withDeadline(Deadline.in(15_000), () =>
        sql.begin(async (tx) => {
          attempts += 1;
          await tx`update balances set cents = cents - 100 where id = 'a'`;
          await tx`update balances set cents = cents + 100 where id = 'b'`;
        }),
      );
      await countedPast("25006", before);
      await refusal.restore();
      await transfer;
    } finally {
      await refusal.restore();
    }
    expect(attempts).toBeGreaterThan(1);
    expect(await balances()).toEqual({ a: 900, b: 1100 });
  });

  it("answers a statement refused until its deadline with deadline exceeded (a 503): nothing applied", async () => {
    const readOnly = createSql(`${database.url}?default_transaction_read_only=on`, {
      schema: "public",
      applicationName: "conflicts-test-read-only",
    });
    try {
      const failure = await withDeadline(
        Deadline.in(1500),
        async () => await readOnly`update balances set cents = 0 where id = 'a'`,
      ).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect((failure as DomainError).kind).toBe("deadline_exceeded");
    } finally {
      await readOnly.end();
    }
    expect(await balances()).toEqual({ a: 1000, b: 1000 });
  });
});

describe("readiness of a pool", () => {
  it("is ready on a writable primary, not on a read-only server, and not while no server answers", async () => {
    expect(await reachesWritablePrimary(sql)).toBe(true);

    const readOnly = createSql(`${database.url}?default_transaction_read_only=on`, {
      schema: "public",
      applicationName: "conflicts-test-read-only",
    });
    const url = new URL(database.url);
    url.port = "1"; // nothing listens there
    const unreachable = createSql(url.toString(), { schema: "public", applicationName: "conflicts-test-nowhere" });
    try {
      expect(await reachesWritablePrimary(readOnly)).toBe(false);
      expect(await reachesWritablePrimary(unreachable, 500)).toBe(false);
    } finally {
      await readOnly.end();
      await unreachable.end({ timeout: 0 });
    }
  });
});

describe("stream replicas", () => {
  let namespace: TestNamespace;
  let nc: NatsConnection;

  beforeAll(async () => {
    namespace = createTestNamespace();
    nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "conflicts-test");
  });

  afterAll(async () => {
    await nc?.close();
    await namespace?.cleanup();
  });

  it("creates a stream with the replicas asked, keeps an existing one's, and warns when it has fewer", async () => {
    const jsm = await nc.jetstreamManager();
    const name = { service: "svc", namespace: namespace.namespace };
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) };

    const stream = await ensureStream(jsm, name, { replicas: 1, logger });
    expect(stream).toBe(streamName(name));
    expect((await jsm.streams.info(stream)).config.num_replicas).toBe(1);
    expect(warnings).toEqual([]);

    // Asked for 3 (EVENTS_REPLICAS=3) of a stream that exists with 1: kept as it is, and said so.
    await ensureStream(jsm, name, { replicas: 3, logger });
    expect((await jsm.streams.info(stream)).config.num_replicas).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]?.[1])).toContain(`nats stream edit ${stream} --replicas 3`);
  });
});
