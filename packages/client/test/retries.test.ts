/**
 * The retry rules of contract section 11, attempt by attempt, against a local server scripted to
 * answer each attempt (every attempt the client makes is recorded). The same rules against the
 * real mesh and the fault proxy: mesh.e2e.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  AffiliateClient,
  ConflictError,
  ConnectionError,
  NotFoundError,
  RateLimitError,
  type RetryEvent,
  ServiceUnavailableError,
  UnknownOutcomeError,
  ValidationError,
} from "../src/index.js";
import { mayRetry, parseRetryAfter, retryDelayMs } from "../src/retry.js";
import { type Reply, scriptedServer } from "./support/scripted-server.js";

type Server = Awaited<ReturnType<typeof scriptedServer>>;
let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const unavailable: Reply = {
  status: 503,
  headers: { "retry-after": "0" },
  body: { error: "Service temporarily unavailable" },
};
const unknownOutcome: Reply = { status: 504, body: { error: "The outcome of the request is unknown" } };
const tracked: Reply = { status: 201, body: { data: { id: "evt_1", type: "click" } } };

/** A client of `script`'s server, with short waits and every retry recorded. */
async function clientOf(script: (index: number) => Reply, maxAttempts = 4) {
  server = await scriptedServer((_request, index) => script(index));
  const retries: RetryEvent[] = [];
  const client = new AffiliateClient({
    baseUrl: server.url,
    apiKey: "sk_live_test",
    retry: { maxAttempts, baseDelayMs: 5, maxDelayMs: 1000 },
    onRetry: (event) => retries.push(event),
  });
  return { client, retries, seen: server.seen };
}

describe("what is retried", () => {
  it("a 503 with Retry-After, on a request that is not idempotent (a click): nothing was applied", async () => {
    const { client, seen, retries } = await clientOf((i) => (i < 2 ? unavailable : tracked));
    await expect(client.events.track({ type: "click", referral_code: "ADA" })).resolves.toMatchObject({
      data: { id: "evt_1" },
    });
    expect(seen.map((request) => request.method)).toEqual(["POST", "POST", "POST"]);
    expect(retries.map((retry) => retry.status)).toEqual([503, 503]);
  });

  it("a 429 with Retry-After, waiting at least as long as it says", async () => {
    const { client, retries } = await clientOf((i) =>
      i === 0 ? { status: 429, headers: { "retry-after": "1" }, body: { error: "Rate limit exceeded" } } : tracked,
    );
    await client.events.track({ type: "click", referral_code: "ADA" });
    expect(retries).toHaveLength(1);
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(1000);
  });

  it("a 504 on a click: never retried, an UnknownOutcomeError after one attempt", async () => {
    const { client, seen } = await clientOf(() => unknownOutcome);
    const error = await client.events.track({ type: "click", referral_code: "ADA" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(error).toMatchObject({ status: 504, idempotencyKey: undefined, requestId: "req_1" });
    expect(seen).toHaveLength(1);
  });

  it("a 504 on a payment without external_id: never retried (it could record the payment twice)", async () => {
    const { client, seen } = await clientOf(() => unknownOutcome);
    await expect(client.events.track({ type: "payment", referral_code: "ADA", amount_cents: 100 })).rejects.toThrow(
      UnknownOutcomeError,
    );
    expect(seen).toHaveLength(1);
  });

  it("a 504 on a payment with external_id: retried, the ledger records it once per external_id", async () => {
    const { client, seen } = await clientOf((i) => (i === 0 ? unknownOutcome : tracked));
    await client.events.track({ type: "payment", referral_code: "ADA", amount_cents: 100, external_id: "ch_1" });
    expect(seen).toHaveLength(2);
    expect(seen[1]?.body).toBe(seen[0]?.body);
  });

  it("a batch is retried after a 504 only when every event is a payment with external_id", async () => {
    const payments = [
      { type: "payment" as const, amount_cents: 1, external_id: "ch_1" },
      { type: "payment" as const, amount_cents: 2, external_id: "ch_2" },
    ];
    const answered = { status: 200, body: { results: [], summary: { total: 0, recorded: 0, replayed: 0, failed: 0 } } };
    const safe = await clientOf((i) => (i === 0 ? unknownOutcome : answered));
    await safe.client.events.trackBatch({ events: payments });
    expect(safe.seen).toHaveLength(2);
    await server?.close();

    const unsafe = await clientOf(() => unknownOutcome);
    await expect(
      unsafe.client.events.trackBatch({ events: [...payments, { type: "click", referral_code: "ADA" }] }),
    ).rejects.toThrow(UnknownOutcomeError);
    expect(unsafe.seen).toHaveLength(1);
  });

  it("a refund always carries an Idempotency-Key, the same one on every attempt, so a 504 is retried", async () => {
    const refunded = { status: 200, body: { data: { commission_id: "com_1" } } };
    const { client, seen } = await clientOf((i) => (i === 0 ? unknownOutcome : i === 1 ? unavailable : refunded));
    await client.refunds.create({ external_id: "ch_1", refund_amount_cents: 100 });
    const keys = seen.map((request) => request.headers["idempotency-key"]);
    expect(keys).toHaveLength(3);
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it("a refund sends the caller's key; a repeat while its first request runs (409 in progress) is retried", async () => {
    const inProgress: Reply = {
      status: 409,
      body: {
        error: "A request with this idempotency key is still in progress; retry later",
        details: { reason: "idempotency_key_in_progress" },
      },
    };
    const { client, seen } = await clientOf((i) => (i === 0 ? inProgress : { status: 200, body: { data: {} } }));
    await client.refunds.create({ external_id: "ch_1" }, { idempotencyKey: "refund-ch_1" });
    expect(seen.map((request) => request.headers["idempotency-key"])).toEqual(["refund-ch_1", "refund-ch_1"]);
  });

  it("any other 409 is the answer", async () => {
    const { client, seen } = await clientOf(() => ({
      status: 409,
      body: { error: "Payment already fully refunded", details: { commission_id: "com_1" } },
    }));
    const error = await client.refunds.create({ external_id: "ch_1" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, details: { commission_id: "com_1" } });
    expect(seen).toHaveLength(1);
  });

  it("a 504 on a read, a PUT or a DELETE: retried", async () => {
    const { client, seen } = await clientOf((i) =>
      i % 2 === 0 ? unknownOutcome : i === 5 ? { status: 204 } : { status: 200, body: { data: { id: "x" } } },
    );
    await client.commissions.get("com_1");
    await client.integrations.stripe.connect({ webhook_secret: "whsec_x" });
    await expect(client.webhooks.delete("wh_1")).resolves.toBeUndefined();
    expect(seen.map((request) => request.method)).toEqual(["GET", "GET", "PUT", "PUT", "DELETE", "DELETE"]);
  });

  it("a 504 on a PATCH: not retried (a payout marked paid twice is not the same as once)", async () => {
    const { client, seen } = await clientOf(() => unknownOutcome);
    await expect(client.payouts.update("po_1", { action: "approve" })).rejects.toThrow(UnknownOutcomeError);
    expect(seen).toHaveLength(1);
  });
});

describe("lost connections", () => {
  it("a read whose connection drops is retried", async () => {
    const { client, seen } = await clientOf((i) =>
      i === 0 ? "drop" : { status: 200, body: { data: { id: "com_1" } } },
    );
    await expect(client.commissions.get("com_1")).resolves.toMatchObject({ data: { id: "com_1" } });
    expect(seen).toHaveLength(2);
  });

  it("a click whose connection drops is not: UnknownOutcomeError, one attempt", async () => {
    const { client, seen } = await clientOf(() => "drop");
    const error = await client.events.track({ type: "click", referral_code: "ADA" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(error).toMatchObject({ status: undefined });
    expect(seen).toHaveLength(1);
  });

  it("a keyed refund whose connection keeps dropping ends in UnknownOutcomeError naming its key", async () => {
    const { client, seen } = await clientOf(() => "drop", 3);
    const error = await client.refunds
      .create({ external_id: "ch_1" }, { idempotencyKey: "refund-1" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownOutcomeError);
    expect(error).toMatchObject({ idempotencyKey: "refund-1" });
    expect(seen).toHaveLength(3);
  });

  it("an attempt past timeoutMs counts as lost: a read that never answers ends in ConnectionError", async () => {
    const silent = await import("node:http").then(({ createServer }) => createServer(() => {}));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as { port: number }).port;
    const client = new AffiliateClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: "sk_live_test",
      timeoutMs: 100,
      retry: { maxAttempts: 2, baseDelayMs: 5 },
    });
    try {
      await expect(client.program.get()).rejects.toThrow(ConnectionError);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

describe("typed errors", () => {
  it("a validation envelope is a ValidationError with fieldErrors, status, error and request id", async () => {
    const { client } = await clientOf(() => ({
      status: 400,
      body: {
        error: "Validation failed",
        details: {
          formErrors: ["Unknown field externalId; did you mean external_id?"],
          fieldErrors: { amount_cents: ["Too big"] },
        },
      },
    }));
    const error = await client.events.track({ type: "payment", amount_cents: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({
      status: 400,
      error: "Validation failed",
      fieldErrors: { amount_cents: ["Too big"] },
      formErrors: ["Unknown field externalId; did you mean external_id?"],
      requestId: "req_1",
    });
  });

  it("404 is a NotFoundError; 429 and 503 after the last attempt are RateLimitError and ServiceUnavailableError", async () => {
    const notFound = await clientOf(() => ({ status: 404, body: { error: "Commission com_1 not found" } }));
    await expect(notFound.client.commissions.get("com_1")).rejects.toMatchObject({
      constructor: NotFoundError,
      error: "Commission com_1 not found",
    });
    await server?.close();
    const limited = await clientOf(
      () => ({ status: 429, headers: { "retry-after": "0" }, body: { error: "Slow down" } }),
      2,
    );
    await expect(limited.client.program.get()).rejects.toMatchObject({
      constructor: RateLimitError,
      retryAfterSeconds: 0,
    });
    expect(limited.seen).toHaveLength(2);
    await server?.close();
    const down = await clientOf(() => unavailable, 2);
    await expect(down.client.program.get()).rejects.toThrow(ServiceUnavailableError);
  });
});

describe("the retry policy", () => {
  const options = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 2000 };

  it("backs off exponentially with full jitter, capped", () => {
    expect([1, 2, 3, 6].map((retry) => retryDelayMs(retry, undefined, options, () => 0.999))).toEqual([
      99, 199, 399, 1998,
    ]);
    expect(retryDelayMs(3, undefined, options, () => 0)).toBe(0);
  });

  it("waits at least Retry-After, and gives up rather than wait past maxDelayMs", () => {
    expect(retryDelayMs(1, 1, options, () => 0)).toBe(1000);
    expect(retryDelayMs(1, 1, options, () => 0.5)).toBe(1050);
    expect(retryDelayMs(1, 3, options, () => 0)).toBeUndefined();
  });

  it("reads Retry-After in seconds or as a date", () => {
    expect(parseRetryAfter("2")).toBe(2);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 5_000)).toBe(5);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter("soon")).toBeUndefined();
  });

  it("retries nothing else: a 500, a 400, a 503 without Retry-After on a request that is not idempotent", () => {
    const answer = (status: number, retryAfterSeconds?: number) =>
      ({ kind: "answer", status, retryAfterSeconds, body: undefined }) as const;
    expect(mayRetry(answer(500), true, true)).toBe(false);
    expect(mayRetry(answer(400), true, true)).toBe(false);
    expect(mayRetry(answer(503), false, false)).toBe(false);
    expect(mayRetry(answer(503), true, false)).toBe(true);
    expect(mayRetry(answer(503, 1), false, false)).toBe(true);
  });
});

describe("requests", () => {
  it("fills path ids percent-encoded, writes the query, sends the key only where the route takes one", async () => {
    const { client, seen } = await clientOf(() => ({
      status: 200,
      body: { data: [], pagination: { next_cursor: null, has_more: false } },
    }));
    await client.request("getCommission", { params: { id: "com 1/2" } });
    await client.commissions.list({ status: "approved", limit: 5n });
    await client.operations.healthz();
    expect(seen.map((request) => request.url)).toEqual([
      "/api/v1/commissions/com%201%2F2",
      "/api/v1/commissions?status=approved&limit=5",
      "/healthz",
    ]);
    expect(seen.map((request) => request.headers["x-api-key"])).toEqual(["sk_live_test", "sk_live_test", undefined]);
  });

  it("starts a list at the cursor its query gives, then follows the pages from there", async () => {
    const { client, seen } = await clientOf((index) => ({
      status: 200,
      body: {
        data: [{ id: `com_${index}` }],
        pagination: index === 1 ? { next_cursor: "c3", has_more: true } : { next_cursor: null, has_more: false },
      },
    }));
    await client.affiliate.commissions.list({ limit: 20, cursor: "c2" });
    const pages = [];
    for await (const page of client.commissions.list({ cursor: "c2" }).pages()) pages.push(page.data);
    expect(seen.map((request) => request.url)).toEqual([
      "/affiliate/v1/commissions?limit=20&cursor=c2",
      "/api/v1/commissions?cursor=c2",
      "/api/v1/commissions?cursor=c3",
    ]);
    expect(pages).toEqual([[{ id: "com_1" }], [{ id: "com_2" }]]);
  });

  it("writes bigint amounts as JSON integers", async () => {
    const { client, seen } = await clientOf(() => tracked);
    await client.events.track({ type: "payment", amount_cents: 100_000_000_000n, external_id: "ch_1" });
    expect(seen[0]?.body).toBe('{"type":"payment","amount_cents":100000000000,"external_id":"ch_1"}');
  });

  it("refuses an Idempotency-Key on a route that does not honour one, rather than retry on a false promise", async () => {
    const { client, seen } = await clientOf(() => tracked);
    await expect(
      client.request("updatePayout", {
        params: { id: "po_1" },
        body: { action: "approve" },
        idempotencyKey: "k",
      } as never),
    ).rejects.toThrow(/takes no Idempotency-Key/);
    expect(seen).toHaveLength(0);
  });
});
