import { createRpcTransport } from "@affiliate/platform";
import { EventType, type TrackBatchRequest, type TrackRequest } from "@affiliate/proto/ledger";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { trackBatchResponseSchema, trackEventResponseSchema } from "@affiliate/rest-shapes/schemas/tracking";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { closedPort } from "./support/closed-port.js";
import { createGateway, expectBody } from "./support/harness.js";

/** A gateway whose fake ledger attributes the code `jane` to a seeded active partnership. */
function trackingGateway(options: Parameters<typeof createGateway>[0] = {}) {
  const gateway = createGateway(options);
  const partnership = gateway.fake.seed(gateway.product.productId, "jane@example.com");
  gateway.ledger.referralCodes.set("jane", partnership.id);
  return { ...gateway, partnership };
}

const batches = (gateway: ReturnType<typeof createGateway>) =>
  gateway.ledger.requestsOf("trackBatch") as TrackBatchRequest[];

const click = { type: "click", referral_code: "jane" };
const payment = (externalId: string, amount = 1000) => ({
  type: "payment",
  referral_code: "jane",
  amount_cents: amount,
  external_id: externalId,
});

describe("POST /events/batch", () => {
  it("answers each event with the status and body it would have had alone, and sends the valid ones in one call", async () => {
    const gateway = trackingGateway({ trackCoalesceMs: 0 });
    await gateway.call("POST", "/events", { body: payment("ch_known") });
    const events = [
      click,
      { type: "click" },
      { type: "click", referral_code: "nobody" },
      payment("ch_new", 12_345),
      payment("ch_known", 5),
      "not an object",
      { type: "signup", occurred_at: "yesterday" },
    ];
    const response = await gateway.call("POST", "/events/batch", { body: { events } });
    expect(response.statusCode).toBe(200);
    const body = expectBody(trackBatchResponseSchema, response.json());
    expect(body.results.map((r) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 400],
      [2, 404],
      [3, 201],
      [4, 200],
      [5, 400],
      [6, 400],
    ]);
    expect(body.summary).toEqual({ total: 7, recorded: 2, replayed: 1, failed: 4 });
    expect(body.results[3]?.data?.commissions).toEqual([
      { id: expect.stringMatching(/^com_/), level: 1, amount_cents: 2469, status: "pending" },
    ]);

    // Each answer is the one POST /events gives for the same body (replays answer the original).
    for (const [index, event] of events.entries()) {
      if (typeof event === "string") continue; // not a JSON object body on its own
      const alone = await gateway.call("POST", "/events", { body: event });
      const { index: _index, status, ...answer } = body.results[index] ?? { index, status: 0 };
      if (status >= 400) {
        expect([status, answer]).toEqual([alone.statusCode, alone.json()]);
      } else if (status === 200) {
        expect([status, answer]).toEqual([alone.statusCode, expectBody(trackEventResponseSchema, alone.json())]);
      }
    }
    expect(body.results[5]).toEqual({
      index: 5,
      status: 400,
      error: "Validation failed",
      details: { formErrors: ["Invalid input: expected object, received string"], fieldErrors: {} },
    });
    expect(body.results[1]).toMatchObject({
      error: "Validation failed",
      details: { fieldErrors: { referral_code: ["Required for a click"] } },
    });

    // One TrackBatch call, with the four events that passed the gateway's checks, in order.
    expect(batches(gateway)).toHaveLength(1);
    expect(batches(gateway)[0]?.events.map((e: TrackRequest) => [e.type, e.referralCode, e.externalId])).toEqual([
      [EventType.CLICK, "jane", undefined],
      [EventType.CLICK, "nobody", undefined],
      [EventType.PAYMENT, "jane", "ch_new"],
      [EventType.PAYMENT, "jane", "ch_known"],
    ]);
    expect(batches(gateway)[0]?.events.every((e) => e.productId === gateway.product.productId && !e.testMode)).toBe(
      true,
    );
  });

  it("calls no service when every event is invalid", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events/batch", { body: { events: [{}, { type: "refund" }] } });
    expect(expectBody(trackBatchResponseSchema, response.json()).summary).toEqual({
      total: 2,
      recorded: 0,
      replayed: 0,
      failed: 2,
    });
    expect(gateway.ledger.callsOf("trackBatch")).toBe(0);
  });

  it("records sandbox events with a test key", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events/batch", {
      key: gateway.product.testKey,
      body: { events: [payment("ch_test")] },
    });
    expect(expectBody(trackBatchResponseSchema, response.json()).results[0]).toMatchObject({
      status: 201,
      data: { test_mode: true, commissions: [{ id: null, level: 1 }] },
    });
    expect(batches(gateway)[0]?.events[0]?.testMode).toBe(true);
  });

  it.each([
    ["no events field", {}],
    ["events that are not an array", { events: { type: "click" } }],
    ["no events", { events: [] }],
    ["501 events", { events: Array.from({ length: 501 }, () => click) }],
  ])("refuses %s with the validation envelope, recording nothing", async (_case, body) => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events/batch", { body });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.fieldErrors).toHaveProperty("events");
    expect(gateway.ledger.callsOf("trackBatch")).toBe(0);
  });

  it("refuses a body over 1 MiB with 413, recording nothing", async () => {
    const gateway = trackingGateway();
    const events = Array.from({ length: 500 }, () => ({ ...click, user_agent: "x".repeat(2100) }));
    const response = await gateway.call("POST", "/events/batch", { body: { events } });
    expect(response.statusCode).toBe(413);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Request body is larger than 1 MiB" });
    expect(gateway.ledger.callsOf("trackBatch")).toBe(0);
  });

  it("answers 503 with Retry-After for the whole batch when the ledger cannot be reached", async () => {
    const ledgerTransport = createRpcTransport(`http://127.0.0.1:${await closedPort()}`, { timeoutMs: 2000 });
    const gateway = trackingGateway({ ledgerTransport });
    const response = await gateway.call("POST", "/events/batch", { body: { events: [click, click] } });
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Service temporarily unavailable" });
  });
});

describe("the tracking rate limit counts events", () => {
  it("spends a batch's events; a batch that does not fit is refused whole, and spends only its request", async () => {
    const gateway = trackingGateway({ trackingRateLimitPerMinute: 10 });
    const eight = await gateway.call("POST", "/events/batch", { body: { events: Array(8).fill(click) } });
    expect(eight.statusCode).toBe(200);
    const three = await gateway.call("POST", "/events/batch", { body: { events: Array(3).fill(click) } });
    expect(three.statusCode).toBe(429);
    expect(Number(three.headers["retry-after"])).toBeGreaterThan(0);
    expect(expectBody(errorSchema, three.json()).error).toMatch(/^Rate limit exceeded, retry in \d+ seconds?$/);
    // 8 + the refused request's 1: one single event still fits, the next does not.
    expect((await gateway.call("POST", "/events", { body: click })).statusCode).toBe(201);
    expect((await gateway.call("POST", "/events", { body: click })).statusCode).toBe(429);
    expect(batches(gateway).flatMap((b) => b.events)).toHaveLength(9);
  });
});

describe("coalescing single POST /events", () => {
  it("gathers 100 concurrent requests into one TrackBatch call, each answered on its own", async () => {
    // The batch is sent when its 96th event arrives (the 4 invalid requests never reach it).
    const gateway = trackingGateway({ trackCoalesceMs: 60_000, trackCoalesceMaxEvents: 96 });
    const { productId } = gateway.product;
    await gateway.ledger.client.track({
      productId,
      type: EventType.PAYMENT,
      referralCode: "jane",
      externalId: "ch_seen",
    });
    const bodies = Array.from({ length: 100 }, (_, i) => {
      if (i % 25 === 3) return { type: "click" }; // 400 at the gateway
      if (i % 25 === 7) return { type: "click", referral_code: "nobody" }; // 404 from the ledger
      if (i % 25 === 11) return payment("ch_seen"); // 200, the original
      if (i % 2 === 0) return { type: "click", referral_code: "jane", visitor_id: `v-${i}` };
      return payment(`ch_${i}`, 100 * (i + 1));
    });
    const responses = await Promise.all(bodies.map((body) => gateway.call("POST", "/events", { body })));
    expect(batches(gateway)).toHaveLength(1);
    expect(batches(gateway)[0]?.events).toHaveLength(96);
    for (const [i, response] of responses.entries()) {
      const body = bodies[i] as Record<string, unknown>;
      if (i % 25 === 3) {
        expect(response.statusCode, `request ${i}`).toBe(400);
        expect(expectBody(validationErrorSchema, response.json()).details.fieldErrors).toHaveProperty("referral_code");
      } else if (i % 25 === 7) {
        expect(response.statusCode, `request ${i}`).toBe(404);
        expect(response.json()).toEqual({ error: "Unknown referral code" });
      } else if (i % 25 === 11) {
        expect(response.statusCode, `request ${i}`).toBe(200);
      } else if (body.type === "click") {
        expect(response.statusCode, `request ${i}`).toBe(201);
        expect(expectBody(trackEventResponseSchema, response.json()).data.visitor_id).toBe(body.visitor_id);
      } else {
        expect(response.statusCode, `request ${i}`).toBe(201);
        const commission = expectBody(trackEventResponseSchema, response.json()).data.commissions[0];
        expect(commission?.amount_cents).toBe((Number(body.amount_cents) * 20) / 100);
      }
    }
  });

  it("answers every waiting request with the call's failure, as it would have answered one", async () => {
    const gateway = trackingGateway({ trackCoalesceMs: 60_000, trackCoalesceMaxEvents: 3 });
    gateway.ledger.failures.set("trackBatch", new ConnectError("ledger down at 10.0.0.7", Code.Unavailable));
    const responses = await Promise.all([1, 2, 3].map(() => gateway.call("POST", "/events", { body: click })));
    for (const response of responses) {
      expect(response.statusCode).toBe(503);
      expect(response.headers["retry-after"]).toBe("1");
      expect(response.json()).toEqual({ error: "Service temporarily unavailable" });
    }
  });

  it("sends each request as its own Track call when coalescing is off", async () => {
    const gateway = trackingGateway({ trackCoalesceMs: 0 });
    await Promise.all([1, 2, 3].map(() => gateway.call("POST", "/events", { body: click })));
    expect([gateway.ledger.callsOf("track"), gateway.ledger.callsOf("trackBatch")]).toEqual([3, 0]);
  });
});
