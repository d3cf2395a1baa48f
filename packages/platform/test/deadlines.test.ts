import { PartnersService } from "@affiliate/proto/partners";
import {
  createFaultProxy,
  createTestDatabase,
  type FaultProxy,
  holdLocks,
  type TestDatabase,
} from "@affiliate/testing";
import { Code, ConnectError, type ConnectRouter, createClient } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSql, type Sql, type TransactionSql } from "../src/db.js";
import { commitReserveMs, currentDeadline, Deadline, withDeadline, withoutDeadline } from "../src/deadline.js";
import { DomainError, isOutcomeUnknown } from "../src/errors.js";
import { asRead, createRpcTransport } from "../src/rpc-client.js";
import { type RpcServer, startRpcServer } from "../src/rpc-server.js";
import { silentLogger, sleep } from "./helpers.js";

let database: TestDatabase;
let sql: Sql;
/** A second pool: the "other session" that holds locks the code under test waits for. */
let other: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  sql = createSql(database.url, { schema: "public", applicationName: "deadlines-test" });
  other = createSql(database.url, { schema: "public", applicationName: "deadlines-test-locker" });
  await sql`create table balances (id text primary key, cents bigint not null)`;
});

afterAll(async () => {
  await sql?.end();
  await other?.end();
  await database?.drop();
});

beforeEach(async () => {
  await sql`delete from balances`;
  await sql`insert into balances values ('a', 1000)`;
});

const balance = async () => (await sql<{ cents: number }[]>`select cents from balances where id = 'a'`)[0]?.cents;

/** Holds the row lock on balance 'a' until the returned function is called. */
function holdRowLock(): Promise<() => Promise<void>> {
  return holdLocks((held) =>
    other.begin(async (tx) => {
      await tx`select cents from balances where id = 'a' for update`;
      await held();
    }),
  );
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describe("transactions under a deadline (createSql)", () => {
  const deduct = (cents: number) => (tx: TransactionSql) =>
    tx`update balances set cents = cents - ${cents} where id = 'a'`;

  it("roll back with deadline_exceeded when a lock is held past the deadline", async () => {
    const release = await holdRowLock();
    try {
      const error = await failureOf(withDeadline(Deadline.in(800), () => sql.begin(deduct(100))));
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).kind).toBe("deadline_exceeded");
    } finally {
      await release();
    }
    expect(await balance()).toBe(1000);
  });

  it("roll back with deadline_exceeded when the work ends too close to the deadline to commit", async () => {
    const error = await failureOf(
      withDeadline(Deadline.in(commitReserveMs + 400), () =>
        sql.begin(async (tx) => {
          await deduct(100)(tx);
          await sleep(450);
        }),
      ),
    );
    expect((error as DomainError).kind).toBe("deadline_exceeded");
    expect(await balance()).toBe(1000);
  });

  it("answer deadline_exceeded by the deadline even while still waiting for a connection, and never commit", async () => {
    const single = createSql(database.url, { schema: "public", max: 1, applicationName: "deadlines-test-single" });
    let release: () => void = () => {};
    let holding: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const busy = single.begin(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          holding();
        }),
    );
    try {
      // The only connection is taken (on a loaded machine BEGIN can take longer than the deadline
      // below, and release() would then be called before it exists).
      await held;
      const waiting = withDeadline(Deadline.in(commitReserveMs + 300), () => single.begin(deduct(100)));
      const error = await failureOf(waiting);
      expect((error as DomainError).kind).toBe("deadline_exceeded");
      release();
      await busy;
      // The abandoned transaction got its connection afterwards, and rolled back.
      await sleep(200);
      expect(await balance()).toBe(1000);
    } finally {
      release();
      await single.end();
    }
  });

  it("never commit once deadline_exceeded was answered, even when the clock then says time is left", async () => {
    // The answer and the commit check race in one event loop; a check that ran a millisecond
    // after the answer, or after the wall clock stepped back, used to find time left and commit.
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let workDone: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      workDone = resolve;
    });
    const error = await failureOf(
      withDeadline(Deadline.in(commitReserveMs + 200), () =>
        sql.begin(async (tx) => {
          await deduct(100)(tx);
          await gate;
          workDone();
        }),
      ),
    );
    expect((error as DomainError).kind).toBe("deadline_exceeded");
    const now = Date.now;
    try {
      Date.now = () => now() - 60_000;
      openGate();
      await done;
      await sleep(100);
    } finally {
      Date.now = now;
    }
    expect(await balance()).toBe(1000);
  });

  it("refuse to begin when less than the commit reserve is left", async () => {
    const error = await failureOf(withDeadline(Deadline.in(commitReserveMs - 50), () => sql.begin(deduct(100))));
    expect((error as DomainError).kind).toBe("deadline_exceeded");
    expect(await balance()).toBe(1000);
  });

  it("leave work that outlives the call (withoutDeadline) unbounded by the call's deadline", async () => {
    const seen = withDeadline(Deadline.in(100), () => [currentDeadline(), withoutDeadline(() => currentDeadline())]);
    expect(seen[0]).toBeInstanceOf(Deadline);
    expect(seen[1]).toBeUndefined();
    // Begun after the call's deadline has passed: refused inside it, applied outside it.
    const late = (run: <T>(work: () => T) => T) =>
      withDeadline(Deadline.in(commitReserveMs + 50), () =>
        run(async () => {
          await sleep(100);
          return sql.begin(deduct(100));
        }),
      );
    expect(((await failureOf(late((work) => work()))) as DomainError).kind).toBe("deadline_exceeded");
    await late(withoutDeadline);
    expect(await balance()).toBe(900);
  });

  it("commit normally within the deadline, and without one", async () => {
    await withDeadline(Deadline.in(2000), () => sql.begin(deduct(100)));
    await sql.begin(deduct(100));
    expect(await balance()).toBe(800);
  });
});

describe("RPC deadlines and transport failures", () => {
  const servers: RpcServer[] = [];
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    for (const proxy of proxies.splice(0)) await proxy.close();
    for (const server of servers.splice(0)) await server.close();
  });

  async function serve(routes: (router: ConnectRouter) => void): Promise<RpcServer> {
    const server = await startRpcServer({
      routes,
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
      readiness: async () => true,
    });
    servers.push(server);
    return server;
  }

  async function proxyTo(server: RpcServer): Promise<FaultProxy> {
    const proxy = await createFaultProxy(`127.0.0.1:${server.port}`);
    proxies.push(proxy);
    return proxy;
  }

  /** A service whose UpdateProgram deducts 100 cents in a transaction, after `pauseMs`. */
  const deductingService =
    (pauseMs = 0, started: () => void = () => {}) =>
    (router: ConnectRouter) =>
      router.service(PartnersService, {
        updateProgram: async () => {
          started();
          await sleep(pauseMs);
          await sql.begin((tx) => tx`update balances set cents = cents - 100 where id = 'a'`);
          return {};
        },
        getProgram: async () => ({ remainingMs: undefined, program: undefined }),
      });

  async function callError(call: () => Promise<unknown>): Promise<ConnectError> {
    return ConnectError.from(await failureOf(call()));
  }

  it("sends the caller's deadline: a service blocked past it rolls back and answers DEADLINE_EXCEEDED", async () => {
    const server = await serve(deductingService());
    const client = createClient(
      PartnersService,
      createRpcTransport(`http://127.0.0.1:${server.port}`, { timeoutMs: 800, graceMs: 2000 }),
    );
    const release = await holdRowLock();
    try {
      const error = await callError(() => client.updateProgram({ productId: "prd_1" }));
      expect(error.code).toBe(Code.DeadlineExceeded);
    } finally {
      await release();
    }
    expect(await balance()).toBe(1000);
  });

  it("gives a nested call what is left of the caller's deadline, less the commit reserve", async () => {
    let seenByInner: number | undefined;
    const inner = await serve((router) =>
      router.service(PartnersService, {
        getProgram: async () => {
          seenByInner = currentDeadline()?.remainingMs();
          return {};
        },
      }),
    );
    const innerClient = createClient(PartnersService, createRpcTransport(`http://127.0.0.1:${inner.port}`));
    const outer = await serve((router) =>
      router.service(PartnersService, {
        getProgram: async () => {
          await sleep(300);
          return innerClient.getProgram({ productId: "prd_1" });
        },
      }),
    );
    const client = createClient(
      PartnersService,
      createRpcTransport(`http://127.0.0.1:${outer.port}`, { timeoutMs: 2000 }),
    );
    await client.getProgram({ productId: "prd_1" });
    expect(seenByInner).toBeGreaterThan(0);
    // A timer may fire up to a millisecond before Date.now() has moved its full delay on.
    expect(seenByInner).toBeLessThanOrEqual(2000 - 300 - commitReserveMs + 1);
  });

  it("answers a connection reset after the request left as an unknown outcome, never ABORTED", async () => {
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const server = await serve(deductingService(300, started));
    const proxy = await proxyTo(server);
    const client = createClient(PartnersService, createRpcTransport(`http://127.0.0.1:${proxy.port}`));
    const call = callError(() => client.updateProgram({ productId: "prd_1" }));
    await running;
    proxy.reset();
    const error = await call;
    expect(isOutcomeUnknown(error)).toBe(true);
    expect(error.code).toBe(Code.Unknown);
  });

  it("answers an unanswered call as an unknown outcome once the deadline and its grace are over", async () => {
    const server = await serve(deductingService());
    const proxy = await proxyTo(server);
    const client = createClient(
      PartnersService,
      createRpcTransport(`http://127.0.0.1:${proxy.port}`, { timeoutMs: 300, graceMs: 200 }),
    );
    await client.getProgram({ productId: "prd_1" });
    proxy.stall();
    const error = await callError(() => client.updateProgram({ productId: "prd_1" }));
    expect(isOutcomeUnknown(error)).toBe(true);
  });

  it("answers a lost read as UNAVAILABLE through asRead: a read applied nothing wherever it got", async () => {
    const server = await serve(deductingService());
    const proxy = await proxyTo(server);
    const client = createClient(
      PartnersService,
      createRpcTransport(`http://127.0.0.1:${proxy.port}`, { timeoutMs: 300, graceMs: 200 }),
    );
    await client.getProgram({ productId: "prd_1" });
    proxy.stall();
    const error = await callError(() => asRead(client.getProgram({ productId: "prd_1" })));
    expect(error.code).toBe(Code.Unavailable);
  });

  it("answers a service that cannot be reached as UNAVAILABLE", async () => {
    const server = await serve(deductingService());
    const proxy = await proxyTo(server);
    await proxy.cut();
    const client = createClient(PartnersService, createRpcTransport(`http://127.0.0.1:${proxy.port}`));
    const error = await callError(() => client.updateProgram({ productId: "prd_1" }));
    expect(error.code).toBe(Code.Unavailable);
    expect(await balance()).toBe(1000);
  });

  it("lets calls in flight finish while the server drains, and refuses new ones as UNAVAILABLE", async () => {
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const server = await serve(deductingService(400, started));
    const client = createClient(PartnersService, createRpcTransport(`http://127.0.0.1:${server.port}`));
    const inFlight = client.updateProgram({ productId: "prd_1" });
    await running;
    const closed = server.close();
    servers.splice(servers.indexOf(server), 1);
    const refused = await callError(() => client.updateProgram({ productId: "prd_1" }));
    await expect(inFlight).resolves.toBeDefined();
    await closed;
    expect(refused.code).toBe(Code.Unavailable);
    expect(await balance()).toBe(900);
  });
});
