import { DomainError, toConnectError } from "@affiliate/platform";
import { EventType, type TrackBatchRequest, type TrackRequest } from "@affiliate/proto/ledger";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { trackEventResponseSchema } from "@affiliate/rest-shapes/schemas/tracking";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { createGateway, expectBody } from "./support/harness.js";

/** A gateway whose fake ledger attributes the code `jane` to a seeded active partnership. */
function trackingGateway(options: Parameters<typeof createGateway>[0] = {}) {
  const gateway = createGateway(options);
  const partnership = gateway.fake.seed(gateway.product.productId, "jane@example.com");
  gateway.ledger.referralCodes.set("jane", partnership.id);
  return { ...gateway, partnership };
}

/** What reached the ledger, one request per event, whether sent alone (Track) or coalesced (TrackBatch). */
const sent = (gateway: ReturnType<typeof createGateway>) => [
  ...(gateway.ledger.requestsOf("track") as TrackRequest[]),
  ...(gateway.ledger.requestsOf("trackBatch") as TrackBatchRequest[]).flatMap((batch) => batch.events),
];

describe("POST /events", () => {
  it("records a click with a live key: 201, the event, the generated visitor id", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", { body: { type: "click", referral_code: "jane" } });
    expect(response.statusCode).toBe(201);
    const body = expectBody(trackEventResponseSchema, response.json());
    expect(body).toEqual({
      data: {
        id: expect.stringMatching(/^evt_/),
        type: "click",
        partnership_id: gateway.partnership.id,
        visitor_id: "vis_generated",
        occurred_at: "2025-03-04T05:06:07.890Z",
        test_mode: false,
        commissions: [],
        commission_skipped: null,
        flags: [],
      },
    });
    expect(sent(gateway)).toMatchObject([
      { productId: gateway.product.productId, testMode: false, type: EventType.CLICK, referralCode: "jane" },
    ]);
    expect(sent(gateway)[0]?.visitorId).toBeUndefined();
    expect(sent(gateway)[0]?.occurredAt).toBeUndefined();
  });

  it("records a payment: every field reaches the ledger, money as bigint, the time as a timestamp", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", {
      body: {
        type: "payment",
        referral_code: "jane",
        visitor_id: "vis_1",
        customer_email: "  Buyer@Example.COM ",
        provider_customer_id: "cus_1",
        amount_cents: 12_345,
        external_id: "ch_1",
        occurred_at: "2025-03-04T06:06:07.890+01:00",
        ip: "203.0.113.9",
        user_agent: "Mozilla/5.0",
      },
    });
    expect(response.statusCode).toBe(201);
    expect(expectBody(trackEventResponseSchema, response.json()).data).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: "payment",
      partnership_id: gateway.partnership.id,
      visitor_id: "vis_1",
      occurred_at: "2025-03-04T05:06:07.890Z",
      test_mode: false,
      commissions: [{ id: expect.stringMatching(/^com_/), level: 1, amount_cents: 2469, status: "pending" }],
      commission_skipped: null,
      flags: [],
    });
    const [request] = sent(gateway);
    expect(request).toMatchObject({
      type: EventType.PAYMENT,
      referralCode: "jane",
      visitorId: "vis_1",
      customerEmail: "buyer@example.com",
      providerCustomerId: "cus_1",
      amountCents: 12_345n,
      externalId: "ch_1",
      ip: "203.0.113.9",
      userAgent: "Mozilla/5.0",
    });
    expect(request?.occurredAt && timestampDate(request.occurredAt).toISOString()).toBe("2025-03-04T05:06:07.890Z");
  });

  it("answers an unattributed signup with partnership_id null", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", {
      body: { type: "signup", customer_email: "new@example.com" },
    });
    expect(response.statusCode).toBe(201);
    expect(expectBody(trackEventResponseSchema, response.json()).data).toMatchObject({
      type: "signup",
      partnership_id: null,
      visitor_id: null,
    });
  });

  it("selects sandbox with a test key: test_mode reaches the ledger and commission ids are null", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", {
      key: gateway.product.testKey,
      body: { type: "payment", referral_code: "jane", amount_cents: 1000 },
    });
    expect(response.statusCode).toBe(201);
    const body = expectBody(trackEventResponseSchema, response.json());
    expect(body.data.test_mode).toBe(true);
    expect(body.data.commissions).toEqual([{ id: null, level: 1, amount_cents: 200, status: "pending" }]);
    expect(sent(gateway)).toMatchObject([{ productId: gateway.product.productId, testMode: true }]);
  });

  it("answers 200 with the original event when the ledger says the payment is a replay", async () => {
    const gateway = trackingGateway();
    const payment = { type: "payment", referral_code: "jane", amount_cents: 5000, external_id: "ch_7" };
    const first = await gateway.call("POST", "/events", { body: payment });
    expect(first.statusCode).toBe(201);
    const again = await gateway.call("POST", "/events", { body: payment });
    expect(again.statusCode).toBe(200);
    expect(expectBody(trackEventResponseSchema, again.json())).toEqual(first.json());
  });

  it("answers 404 { error } for a click with a referral code the ledger does not know", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", { body: { type: "click", referral_code: "nobody" } });
    expect(response.statusCode).toBe(404);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Unknown referral code" });
  });

  it.each([
    ["no type", { referral_code: "jane" }, "type"],
    ["an unknown type", { type: "refund" }, "type"],
    ["a click without a referral code", { type: "click" }, "referral_code"],
    ["a referral code with a space", { type: "click", referral_code: "ja ne" }, "referral_code"],
    ["a payment without an amount", { type: "payment", referral_code: "jane" }, "amount_cents"],
    ["an amount of 0", { type: "payment", amount_cents: 0 }, "amount_cents"],
    ["a negative amount", { type: "payment", amount_cents: -5 }, "amount_cents"],
    ["a fractional amount", { type: "payment", amount_cents: 1.5 }, "amount_cents"],
    ["an amount as a string", { type: "payment", amount_cents: "100" }, "amount_cents"],
    ["an empty visitor id", { type: "signup", visitor_id: "" }, "visitor_id"],
    ["a visitor id over 128 characters", { type: "signup", visitor_id: "v".repeat(129) }, "visitor_id"],
    ["a bad customer email", { type: "signup", customer_email: "not-an-email" }, "customer_email"],
    ["a time that is not ISO 8601", { type: "signup", occurred_at: "yesterday" }, "occurred_at"],
    ["a date without a time", { type: "signup", occurred_at: "2025-01-02" }, "occurred_at"],
    ["a user agent over 1024 characters", { type: "signup", user_agent: "u".repeat(1025) }, "user_agent"],
  ])("answers 400 fieldErrors.<field> for %s, without calling the ledger", async (_case, body, field) => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", { body });
    expect(response.statusCode).toBe(400);
    const envelope = expectBody(validationErrorSchema, response.json());
    expect(Object.keys(envelope.details.fieldErrors)).toEqual([field]);
    expect(sent(gateway).length).toBe(0);
  });

  it("answers 400 with the envelope when there is no body", async () => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events");
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.formErrors).toHaveLength(1);
  });

  it("turns the ledger's field violations into the validation envelope", async () => {
    const gateway = trackingGateway();
    const invalid = toConnectError(
      DomainError.invalidField("occurred_at", "Must not be more than 5 minutes in the future"),
    );
    gateway.ledger.failures.set("track", invalid);
    gateway.ledger.failures.set("trackBatch", invalid);
    const response = await gateway.call("POST", "/events", {
      body: { type: "signup", occurred_at: "2099-01-01T00:00:00.000Z" },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { occurred_at: ["Must not be more than 5 minutes in the future"] } },
    });
  });
});

describe("POST /events authentication", () => {
  it.each([
    ["no key", null, "Missing x-api-key header"],
    ["an empty key", "", "Missing x-api-key header"],
    ["a key without the sk_ or pk_ prefix", "xk_live_abc", "Invalid API key format"],
    ["an unknown live key", "sk_live_nobody", "Invalid or revoked API key"],
    ["an unknown test key", "sk_test_nobody", "Invalid or revoked API key"],
  ])("answers 401 with the management API's text for %s", async (_case, key, error) => {
    const gateway = trackingGateway();
    const response = await gateway.call("POST", "/events", { key, body: { type: "click", referral_code: "jane" } });
    expect(response.statusCode).toBe(401);
    expect(expectBody(errorSchema, response.json())).toEqual({ error });
    expect(sent(gateway).length).toBe(0);
  });

  it("accepts the test key that the management API refuses with 403", async () => {
    const gateway = trackingGateway();
    expect((await gateway.call("GET", "/api/v1/program", { key: gateway.product.testKey })).statusCode).toBe(403);
    const tracked = await gateway.call("POST", "/events", {
      key: gateway.product.testKey,
      body: { type: "click", referral_code: "jane" },
    });
    expect(tracked.statusCode).toBe(201);
  });

  it("answers 401 for an old key once its product's keys are evicted", async () => {
    const gateway = trackingGateway({ trusted: true });
    const click = { type: "click", referral_code: "jane" };
    expect((await gateway.call("POST", "/events", { body: click })).statusCode).toBe(201);
    gateway.fake.rotateKeys(gateway.product.productId);
    gateway.keyCache.evictProduct(gateway.product.productId);
    const old = await gateway.call("POST", "/events", { body: click });
    expect(old.statusCode).toBe(401);
    expect(old.json()).toEqual({ error: "Invalid or revoked API key" });
  });
});

describe("POST /events rate limit", () => {
  it("spends TRACKING_RATE_LIMIT_PER_MINUTE per key, apart from the management budget", async () => {
    const gateway = trackingGateway({ trackingRateLimitPerMinute: 2, rateLimitPerMinute: 100 });
    const click = { type: "click", referral_code: "jane" };
    for (let i = 0; i < 2; i++) expect((await gateway.call("POST", "/events", { body: click })).statusCode).toBe(201);
    const limited = await gateway.call("POST", "/events", { body: click });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(expectBody(errorSchema, limited.json()).error).toMatch(/^Rate limit exceeded, retry in \d+ seconds?$/);
    expect(sent(gateway).length).toBe(2);
    // The management API's budget for the same key is untouched.
    expect((await gateway.call("GET", "/api/v1/program")).statusCode).toBe(200);
    // The test key of the same product has a budget of its own.
    const sandbox = await gateway.call("POST", "/events", { key: gateway.product.testKey, body: click });
    expect(sandbox.statusCode).toBe(201);
  });

  it("is not limited by the management API's budget", async () => {
    const gateway = trackingGateway({ trackingRateLimitPerMinute: 100, rateLimitPerMinute: 1 });
    expect((await gateway.call("GET", "/api/v1/program")).statusCode).toBe(200);
    expect((await gateway.call("GET", "/api/v1/program")).statusCode).toBe(429);
    const click = { type: "click", referral_code: "jane" };
    for (let i = 0; i < 3; i++) expect((await gateway.call("POST", "/events", { body: click })).statusCode).toBe(201);
  });
});
