import {
  createFaultProxy,
  createTestDatabase,
  createTestNamespace,
  type FaultProxy,
  holdLocks,
  killAndWait,
  type TestDatabase,
  type TestNamespace,
} from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { runTool, startTestMesh } from "./helpers.js";

/**
 * Failures never lie (contract section 11): the mesh started as processes, with Postgres and
 * NATS reached through fault proxies this test owns, faults injected there or by killing the
 * ledger, and every answer checked against what the database says was applied.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let pgProxy: FaultProxy;
let natsProxy: FaultProxy;
let mesh: Mesh;
/** Direct to the test database (not through the proxy): locks and the truth about what applied. */
let db: postgres.Sql;
let cliEnv: NodeJS.ProcessEnv;

const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * kill -9 of the ledger, as a crash; resolves once the process is gone (its port is free). The
 * tests restart it themselves with startService, which cancels the launcher's pending restart.
 */
async function killLedger(): Promise<void> {
  const pid = mesh.pids.ledger;
  if (!pid) throw new Error("the ledger is not running");
  await killAndWait(pid);
}

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  pgProxy = await createFaultProxy(database.url);
  natsProxy = await createFaultProxy(natsUrl);
  db = postgres(database.url, { max: 4, onnotice: () => {} });
  mesh = await startTestMesh({
    databaseUrl: pgProxy.url(database.url),
    natsUrl: natsProxy.url(natsUrl),
    env: { EVENTS_NAMESPACE: namespace.namespace, KEY_CACHE_TTL_MS: "600000", LOG_LEVEL: "warn" },
  });
  cliEnv = { PARTNERS_URL: mesh.urls.partners };
});

afterAll(async () => {
  await mesh?.stop();
  await db?.end();
  await pgProxy?.close();
  await natsProxy?.close();
  await namespace?.cleanup();
  await database?.drop();
});

interface Answer {
  status: number;
  headers: Headers;
  json: { error?: string; data?: Record<string, unknown> } | undefined;
}

async function api(
  method: string,
  path: string,
  options: { key: string; body?: unknown; headers?: Record<string, string> },
): Promise<Answer> {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: {
      "x-api-key": options.key,
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

async function newProgram(name: string) {
  const result = await runTool("admin", ["products", "create", "--name", name], cliEnv);
  expect(result.code).toBe(0);
  const product = JSON.parse(result.stdout) as { product_id: string; secret_key: string };
  const registered = await api("POST", "/api/v1/affiliates", {
    key: product.secret_key,
    body: { email: `${name.toLowerCase().replace(/\W/g, "")}@example.com`, referralCode: name.replace(/\W/g, "") },
  });
  expect(registered.status).toBe(201);
  return { productId: product.product_id, key: product.secret_key, code: name.replace(/\W/g, "") };
}

type Program = Awaited<ReturnType<typeof newProgram>>;

let paymentCounter = 0;
async function pay(program: Program, amountCents = 100_000): Promise<string> {
  const externalId = `ch_${Date.now().toString(36)}_${++paymentCounter}`;
  const answer = await api("POST", "/events", {
    key: program.key,
    body: { type: "payment", referral_code: program.code, amount_cents: amountCents, external_id: externalId },
  });
  expect(answer.status).toBe(201);
  return externalId;
}

const refund = (program: Program, externalId: string, idempotencyKey?: string) =>
  api("POST", "/api/v1/refunds", {
    key: program.key,
    body: { external_id: externalId, refund_amount_cents: 1000 },
    headers: idempotencyKey ? { "idempotency-key": idempotencyKey } : {},
  });

/** What the ledger really applied to a payment: its refunds, and the refunded total it keeps. */
async function appliedRefunds(externalId: string): Promise<{ count: number; refundedCents: number }> {
  const [row] = await db<{ count: number; refunded: string }[]>`
    select (select count(*)::int from ledger.refunds r where r.event_id = e.id) as count,
           e.refunded_cents::text as refunded
    from ledger.tracking_events e where e.external_id = ${externalId}`;
  return { count: row?.count ?? -1, refundedCents: Number(row?.refunded ?? -1) };
}

/** Holds the payment's row lock (as a long transaction elsewhere would) until released. */
function lockPayment(externalId: string): Promise<() => Promise<void>> {
  return holdLocks((held) =>
    db.begin(async (tx) => {
      await tx`select id from ledger.tracking_events where external_id = ${externalId} for update`;
      await held();
    }),
  );
}

/** The statuses a transport failure or a fault may answer; anything else must be a real outcome. */
const faultStatuses = new Set([503, 504]);

function expectTruthfulFailure(answer: Answer): void {
  if (answer.status === 503) expect(answer.headers.get("retry-after"), JSON.stringify(answer.json)).toBe("1");
  if (answer.status === 504) {
    expect(answer.headers.get("retry-after")).toBeNull();
    expect(answer.json?.error).toContain("Idempotency-Key");
  }
}

describe("refunds against a deadline", () => {
  it("a refund whose payment row is locked past the deadline is 503 with nothing applied, or its real outcome", async () => {
    const program = await newProgram("Locked Row");
    const externalId = await pay(program);
    const release = await lockPayment(externalId);
    let answer: Answer;
    try {
      answer = await refund(program, externalId);
    } finally {
      await release();
    }
    expect([200, 503]).toContain(answer.status);
    expectTruthfulFailure(answer);
    // Whatever commit the ledger might still have had in flight has landed by now.
    await sleep(1000);
    expect(await appliedRefunds(externalId)).toEqual(
      answer.status === 503 ? { count: 0, refundedCents: 0 } : { count: 1, refundedCents: 1000 },
    );

    const retried = await refund(program, externalId);
    expect(retried.status).toBe(200);
    const expected = answer.status === 503 ? 1 : 2;
    expect(await appliedRefunds(externalId)).toEqual({ count: expected, refundedCents: expected * 1000 });
  });

  it("with Postgres cut for 5 s during keyed and unkeyed refunds: none applied behind a 503, none twice", async () => {
    const program = await newProgram("Postgres Cut");
    const unkeyed = await Promise.all(Array.from({ length: 8 }, () => pay(program)));
    const keyed = await Promise.all(Array.from({ length: 8 }, () => pay(program)));
    const keyOf = (externalId: string) => `refund-${externalId}`;

    // One refund per payment, spread over the outage (and just before it), all in flight at once.
    const requests = [...unkeyed.map((id) => ({ id, key: undefined })), ...keyed.map((id) => ({ id, key: keyOf(id) }))];
    const answers = Promise.all(
      requests.map(async ({ id, key }, index) => {
        await sleep(index * 300);
        return { id, key, answer: await refund(program, id, key) };
      }),
    );
    await sleep(100);
    await pgProxy.cut();
    await sleep(5000);
    await pgProxy.restore();
    const outcomes = await answers;

    for (const { id, answer } of outcomes) {
      expect(answer.status, JSON.stringify(answer.json)).not.toBe(500);
      expect(answer.status).not.toBe(409);
      expect([200, 503, 504]).toContain(answer.status);
      expectTruthfulFailure(answer);
      const applied = await appliedRefunds(id);
      if (answer.status === 200) expect(applied).toEqual({ count: 1, refundedCents: 1000 });
      if (answer.status === 503) expect(applied).toEqual({ count: 0, refundedCents: 0 });
    }
    expect(outcomes.some(({ answer }) => answer.status === 503)).toBe(true);

    // Clients do what the answers tell them: a keyed refund is repeated with its key until it
    // answers; an unkeyed one is retried after a 503, and after a 504 only if reading the payment
    // shows it was not applied.
    for (const { id, key, answer } of outcomes) {
      let last = answer;
      for (let tries = 0; last.status !== 200 && tries < 40; tries++) {
        if (key === undefined && last.status === 504 && (await appliedRefunds(id)).count === 1) break;
        await sleep(250);
        last = await refund(program, id, key);
        expect([200, 503, 504]).toContain(last.status);
        if (last.status === 503 && key === undefined) expect((await appliedRefunds(id)).count).toBe(0);
      }
      expect(await appliedRefunds(id)).toEqual({ count: 1, refundedCents: 1000 });
    }
  });
});

describe("keys under a partition", () => {
  it("with NATS stalled, a rotated key gets 401 within 2 s", async () => {
    const program = await newProgram("Stalled Feed");
    expect((await api("GET", "/api/v1/program", { key: program.key })).status).toBe(200);
    natsProxy.stall();
    try {
      const rotated = await runTool("admin", ["keys", "rotate", "--product", program.productId], cliEnv);
      expect(rotated.code).toBe(0);
      // Bounded wait: polled until 401, given up after 2.5 s (the promise is 2 s).
      const giveUpAt = Date.now() + 2500;
      let answer = await api("GET", "/api/v1/program", { key: program.key });
      while (answer.status !== 401 && Date.now() < giveUpAt) {
        await sleep(100);
        answer = await api("GET", "/api/v1/program", { key: program.key });
      }
      expect(answer).toMatchObject({ status: 401, json: { error: "Invalid or revoked API key" } });
    } finally {
      await natsProxy.restore();
    }
  });
});

describe("the ledger dying or draining", () => {
  it("a key whose ledger died mid-request answers 504, then is usable again within 10 s", async () => {
    const program = await newProgram("Died Mid Refund");
    const externalId = await pay(program);
    const release = await lockPayment(externalId);
    const pending = refund(program, externalId, "crash-key");
    // The request has reserved its key and waits for the payment's lock when the ledger dies.
    await sleep(500);
    await killLedger();
    const killedAt = Date.now();
    // Restarted at once (before the launcher's own back-off restart would).
    const restarted = mesh.startService("ledger");
    const lost = await pending;
    await release();
    expect(lost.status).toBe(504);
    expectTruthfulFailure(lost);
    await restarted;

    let answer = await refund(program, externalId, "crash-key");
    while (answer.status === 409 && Date.now() - killedAt < 10_000) {
      await sleep(250);
      answer = await refund(program, externalId, "crash-key");
    }
    expect(answer.status).toBe(200);
    expect(await appliedRefunds(externalId)).toEqual({ count: 1, refundedCents: 1000 });
  });

  /**
   * 20 clients post payments, each retrying a 503 or 504 with the same external_id (as the
   * contract tells them to) until it is recorded; `fault` runs meanwhile.
   */
  async function paymentsUnderFault(program: Program, fault: () => Promise<void>) {
    const statuses: number[] = [];
    const resets: unknown[] = [];
    const externalIds: string[] = [];
    let stop = false;
    const client = async (client: number) => {
      for (let n = 0; !stop; n++) {
        const externalId = `load_${client}_${n}_${Date.now().toString(36)}`;
        externalIds.push(externalId);
        for (let attempt = 0; attempt < 200; attempt++) {
          let answer: Answer;
          try {
            answer = await api("POST", "/events", {
              key: program.key,
              body: { type: "payment", referral_code: program.code, amount_cents: 5000, external_id: externalId },
            });
          } catch (error) {
            resets.push(error);
            await sleep(100);
            continue;
          }
          statuses.push(answer.status);
          if (!faultStatuses.has(answer.status)) break;
          expectTruthfulFailure(answer);
          await sleep(100);
        }
      }
    };
    const clients = Array.from({ length: 20 }, (_, i) => client(i));
    try {
      await sleep(1000);
      await fault();
      await sleep(1000);
    } finally {
      stop = true;
      await Promise.allSettled(clients);
    }
    await Promise.all(clients);
    return { statuses, resets, externalIds };
  }

  async function expectEachPaymentStoredOnce(externalIds: string[]) {
    const rows = await db<{ externalId: string; count: number }[]>`
      select external_id as "externalId", count(*)::int as count from ledger.tracking_events
      where external_id = any(${externalIds}) group by external_id`;
    expect(rows).toHaveLength(externalIds.length);
    expect(rows.filter((row) => row.count !== 1)).toEqual([]);
  }

  it("kill -9 under 20 concurrent payments: no 409 or 500, retries converge, each payment stored once", async () => {
    const program = await newProgram("Killed Ledger");
    const { statuses, resets, externalIds } = await paymentsUnderFault(program, async () => {
      await killLedger();
      await mesh.startService("ledger");
    });
    expect(resets).toEqual([]);
    expect(statuses.filter((s) => s === 409 || (s >= 500 && !faultStatuses.has(s)))).toEqual([]);
    expect(statuses.filter((s) => faultStatuses.has(s)).length).toBeGreaterThan(0);
    // Converged: every payment's last answer recorded it (201), or replayed it (200).
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);
    await expectEachPaymentStoredOnce(externalIds);
  });

  it("SIGTERM to the ledger under load: no resets, no 500s, each payment stored once", async () => {
    const program = await newProgram("Drained Ledger");
    const { statuses, resets, externalIds } = await paymentsUnderFault(program, async () => {
      await mesh.stopService("ledger");
      await mesh.startService("ledger");
    });
    expect(resets).toEqual([]);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 409)).toEqual([]);
    await expectEachPaymentStoredOnce(externalIds);
  });
});
