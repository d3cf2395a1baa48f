/**
 * The client against the real mesh, started as processes (as `npm start` does) with Postgres
 * reached through a fault proxy: the README's example end to end, a sum past 2^53 read exactly,
 * the retry rules of contract section 11 under real faults (Postgres cut: 503; the ledger killed
 * mid-request: 504; a connection to the gateway reset), every page of a list, and a real
 * webhook delivery verified across a secret rotation. Every outcome is checked against what the
 * database says was applied.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { Mesh } from "@affiliate/mesh";
import { createProduct, startTestMesh } from "@affiliate/mesh/testing";
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
// @ts-expect-error: plain JavaScript scripts, typed by their use here
import { committedSnapshot } from "../scripts/document.mjs";
import {
  AffiliateClient,
  type ClientOptions,
  type RetryEvent,
  UnknownOutcomeError,
  verifyWebhook,
  WebhookVerificationError,
} from "../src/index.js";

let database: TestDatabase;
let namespace: TestNamespace;
/** Between every service and Postgres: cut to make a service unable to commit (503). */
let pgProxy: FaultProxy;
let mesh: Mesh;
/** Straight to the test database: locks, seeds, and the truth about what was applied. */
let db: postgres.Sql;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  pgProxy = await createFaultProxy(database.url);
  db = postgres(database.url, { max: 4, onnotice: () => {} });
  mesh = await startTestMesh({
    databaseUrl: pgProxy.url(database.url),
    // Keys stay cached while Postgres is cut, as they would across a short outage.
    env: { EVENTS_NAMESPACE: namespace.namespace, KEY_CACHE_TTL_MS: "600000", LOG_LEVEL: "warn" },
  });
});

afterAll(async () => {
  await mesh?.stop();
  await db?.end();
  await pgProxy?.close();
  await namespace?.cleanup();
  await database?.drop();
});

/** A new product with one affiliate (referral code `code`), and a client with its key. */
async function program(name: string, options: Partial<ClientOptions> = {}) {
  const product = await createProduct(mesh, name);
  const client = new AffiliateClient({ baseUrl: mesh.gatewayUrl, apiKey: product.secret_key, ...options });
  const code = name.replace(/\W/g, "").toUpperCase();
  const { partnership } = await client.affiliates.register({
    email: `${code.toLowerCase()}@example.com`,
    referralCode: code,
  });
  return { product, client, code, partnershipId: partnership.id };
}

/** kill -9 of the ledger, as a crash; resolves once the process is gone. */
async function killLedger(): Promise<void> {
  const pid = mesh.pids.ledger;
  if (!pid) throw new Error("the ledger is not running");
  await killAndWait(pid);
}

/** What the ledger applied to a payment: its refunds and the refunded total it keeps. */
async function appliedRefunds(externalId: string) {
  const [row] = await db<{ count: number; refunded: string }[]>`
    select (select count(*)::int from ledger.refunds r where r.event_id = e.id) as count, e.refunded_cents::text as refunded
    from ledger.tracking_events e where e.external_id = ${externalId}`;
  return { count: row?.count ?? -1, refundedCents: Number(row?.refunded ?? -1) };
}

async function paymentsOf(productId: string, amountCents: number): Promise<number> {
  const [row] = await db<{ count: number }[]>`
    select count(*)::int as count from ledger.tracking_events
    where product_id = ${productId} and event_type = 'payment' and amount_cents = ${amountCents}`;
  return row?.count ?? -1;
}

describe("the README's quick start", () => {
  it("runs end to end as examples/quickstart.ts, against a fresh product", async () => {
    const product = await createProduct(mesh, "Quickstart");
    const example = fileURLToPath(new URL("../examples/quickstart.ts", import.meta.url));
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [example], {
        env: { ...process.env, AFFILIATE_API_URL: mesh.gatewayUrl, AFFILIATE_API_KEY: product.secret_key },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
      });
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      child.on("error", reject);
      child.on("exit", (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("refund: commission 2500 -> 1875");
    expect(run.stdout).toMatch(/payout: po_\S+ completed 1875n/);
    expect(run.stdout).toMatch(/webhook verified: commission\.refunded com_\S+ 1625/);
    expect(run.stdout).toContain("conflict:");
    expect(run.stdout.trim().endsWith("done")).toBe(true);
  });
});

describe("exact money", () => {
  it("reads a partnership's earnings past 2^53 digit for digit, where JSON.parse rounds", async () => {
    const { product, client, code, partnershipId } = await program("Big Earner");
    await client.events.track({ type: "payment", referral_code: code, amount_cents: 10_000, external_id: "ch_big" });
    // The earnings of 90,072 payments at the maximum amount, seeded into the ledger's rollup (a
    // shard of its own) rather than tracked one by one: 2^53 + 1 cents more, pending.
    const seeded = 2n ** 53n + 1n;
    await db`
      insert into ledger.partnership_rollups (partnership_id, shard, product_id, pending_count, pending_amount_cents)
      values (${partnershipId}, 15, ${product.product_id}, 90072, ${seeded.toString()}::bigint)
      on conflict (partnership_id, shard) do update set
        pending_count = partnership_rollups.pending_count + excluded.pending_count,
        pending_amount_cents = partnership_rollups.pending_amount_cents + excluded.pending_amount_cents`;

    const expected = seeded + 2000n; // the real commission: 20% of 10,000
    const { data } = await client.affiliates.get(partnershipId);
    expect(data.stats.earned_cents).toBe(expected);
    expect(data.commissions.pending_amount_cents).toBe(expected);
    expect(expected > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);

    const raw = await fetch(`${mesh.gatewayUrl}/api/v1/affiliates/${partnershipId}`, {
      headers: { "x-api-key": product.secret_key },
    }).then((response) => response.text());
    expect(raw).toContain(`"earned_cents":${expected}`);
    expect(BigInt(JSON.parse(raw).data.stats.earned_cents)).not.toBe(expected);
  });
});

describe("retries under real faults", () => {
  it("a 503 (Postgres cut) on a payment without external_id is retried and applied once", async () => {
    const retries: RetryEvent[] = [];
    const { product, client, code } = await program("Cut Postgres", {
      retry: { maxAttempts: 10, baseDelayMs: 200, maxDelayMs: 3000 },
      onRetry: (event) => {
        retries.push(event);
        // Postgres is back for the retry: the outage lasted one attempt.
        if (retries.length === 1) void pgProxy.restore();
      },
    });
    await client.events.track({ type: "click", referral_code: code });
    await pgProxy.cut();
    try {
      const tracked = await client.events.track({ type: "payment", referral_code: code, amount_cents: 4321 });
      expect(tracked.data.type).toBe("payment");
    } finally {
      await pgProxy.restore();
    }
    expect(retries[0]).toMatchObject({ operationId: "trackEvent", attempt: 1, status: 503, idempotencyKey: undefined });
    expect(await paymentsOf(product.product_id, 4321)).toBe(1);
  });

  it("a 504 (the ledger killed mid-refund) on a keyed refund is retried to the refund's stored outcome", async () => {
    const retries: RetryEvent[] = [];
    let release: () => Promise<void> = async () => {};
    const { client, code } = await program("Killed Refund", {
      retry: { maxAttempts: 60, baseDelayMs: 250, maxDelayMs: 2000 },
      onRetry: (event) => {
        retries.push(event);
        if (event.status === 504) void release();
      },
    });
    await client.events.track({ type: "payment", referral_code: code, amount_cents: 10_000, external_id: "ch_killed" });
    // The payment's row is held, so the refund waits inside the ledger when the ledger dies.
    release = await holdLocks((held) =>
      db.begin(async (tx) => {
        await tx`select id from ledger.tracking_events where external_id = 'ch_killed' for update`;
        await held();
      }),
    );
    const refunding = client.refunds.create(
      { external_id: "ch_killed", refund_amount_cents: 1000 },
      { idempotencyKey: "refund-ch_killed" },
    );
    await sleep(500);
    await killLedger();
    await mesh.startService("ledger");
    const refunded = await refunding;
    await release();

    expect(retries[0]).toMatchObject({ status: 504, idempotencyKey: "refund-ch_killed" });
    expect(refunded.data.refund_amount_cents).toBe(1000);
    expect(await appliedRefunds("ch_killed")).toEqual({ count: 1, refundedCents: 1000 });
    // The key now answers the stored outcome, and refunds nothing more.
    await expect(
      client.refunds.create(
        { external_id: "ch_killed", refund_amount_cents: 1000 },
        { idempotencyKey: "refund-ch_killed" },
      ),
    ).resolves.toEqual(refunded);
    expect(await appliedRefunds("ch_killed")).toEqual({ count: 1, refundedCents: 1000 });
  });

  it("a 504 on a payment without external_id is never retried: one attempt, UnknownOutcomeError", async () => {
    let attempts = 0;
    const { product, client, code } = await program("Unkeyed Payment", {
      retry: { maxAttempts: 10, baseDelayMs: 50 },
      fetch: (input, init) => {
        attempts++;
        return fetch(input, init);
      },
    });
    await client.events.track({ type: "click", referral_code: code });
    attempts = 0;
    // No payment can be inserted while this lock is held: the payment waits inside the ledger.
    const release = await holdLocks((held) =>
      db.begin(async (tx) => {
        await tx`lock table ledger.tracking_events in share mode`;
        await held();
      }),
    );
    const paying = client.events
      .track({ type: "payment", referral_code: code, amount_cents: 777 })
      .catch((caught: unknown) => caught);
    await sleep(500);
    await killLedger();
    const error = await paying;
    await release();
    await mesh.startService("ledger");

    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(error).toMatchObject({ status: 504, idempotencyKey: undefined });
    expect(attempts).toBe(1);
    // The ledger died before committing: nothing was recorded, and the client did not guess.
    expect(await paymentsOf(product.product_id, 777)).toBe(0);
  });

  it("a connection to the gateway reset through the fault proxy: a read is retried, a click is not", async () => {
    const front = await createFaultProxy(mesh.gatewayUrl);
    try {
      const retries: RetryEvent[] = [];
      const { product, code } = await program("Reset Front");
      const client = new AffiliateClient({
        baseUrl: front.url(mesh.gatewayUrl).replace(/\/$/, ""),
        apiKey: product.secret_key,
        retry: { maxAttempts: 5, baseDelayMs: 100 },
        onRetry: (event) => {
          retries.push(event);
          void front.restore();
        },
      });
      const resetWhileInFlight = async <T>(call: () => Promise<T>) => {
        front.stall();
        const pending = call().catch((error: unknown) => error);
        while (front.connections === 0) await sleep(10);
        await sleep(100);
        front.reset();
        return pending;
      };

      const read = await resetWhileInFlight(() => client.program.get());
      expect(read).toMatchObject({ data: { product_id: product.product_id } });
      expect(retries.map((retry) => [retry.operationId, retry.status])).toEqual([["getProgram", undefined]]);

      const click = await resetWhileInFlight(() => client.events.track({ type: "click", referral_code: code }));
      expect(click).toBeInstanceOf(UnknownOutcomeError);
      expect(retries).toHaveLength(1);
    } finally {
      await front.close();
    }
  });
});

describe("lists and webhooks", () => {
  it("iterates every page of a list, newest first", async () => {
    const { client } = await program("Many Pages");
    await client.affiliates.bulkRegister({
      notify: false,
      affiliates: Array.from({ length: 5 }, (_, i) => ({ email: `page${i}@example.com` })),
    });
    const seen: string[] = [];
    for await (const affiliate of client.affiliates.list({ limit: 2 })) seen.push(affiliate.id);
    expect(seen).toHaveLength(6);
    expect(new Set(seen).size).toBe(6);
    const firstPage = await client.affiliates.list({ limit: 2 });
    expect(firstPage.data.map((affiliate) => affiliate.id)).toEqual(seen.slice(0, 2));
  });

  it("verifies a real delivery signed with both secrets after a rotation, with either secret", async () => {
    const { client } = await program("Rotated Hook");
    const deliveries: { body: Buffer; headers: IncomingHttpHeaders }[] = [];
    const receiver = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      deliveries.push({ body: Buffer.concat(chunks), headers: request.headers });
      response.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      const created = await client.webhooks.create({ url, events: ["commission.created"] });
      const rotated = await client.webhooks.rotateSecret(created.data.id);
      expect(rotated.data.secret).not.toBe(created.data.secret);
      await client.webhooks.test(created.data.id);
      while (deliveries.length === 0) await sleep(50);
      const [delivery] = deliveries;
      if (!delivery) throw new Error("no delivery");
      expect(String(delivery.headers["webhook-signature"]).split(" ")).toHaveLength(2);

      for (const secrets of [[created.data.secret], [rotated.data.secret]]) {
        const event = verifyWebhook(delivery.body, delivery.headers, secrets);
        expect(event).toMatchObject({ type: "webhook.test", data: { webhook_id: created.data.id } });
      }
      const stranger = await client.webhooks.create({ url, events: ["payout.created"] });
      expect(() => verifyWebhook(delivery.body, delivery.headers, stranger.data.secret)).toThrow(
        WebhookVerificationError,
      );
    } finally {
      receiver.closeAllConnections();
      receiver.close();
    }
  });
});

describe("the served document", () => {
  it("GET /api/v1/openapi.json answers the committed snapshot", async () => {
    const client = new AffiliateClient({ baseUrl: mesh.gatewayUrl });
    expect(await client.operations.openapi()).toEqual(committedSnapshot());
  });
});
