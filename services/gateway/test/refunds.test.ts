import { createHash } from "node:crypto";
import { DomainError, toConnectError } from "@affiliate/platform";
import { CommissionStatus, type RefundRequest } from "@affiliate/proto/ledger";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  alreadyRefundedErrorSchema,
  ambiguousPaymentErrorSchema,
  keyMismatchMessage,
  missingStrategyMessage,
  refundOutOfRangeErrorSchema,
  refundResponseSchema,
  severalStrategiesMessage,
} from "@affiliate/rest-shapes/schemas/refunds";
import { describe, expect, it } from "vitest";
import { createGateway, expectBody } from "./support/harness.js";

/** A gateway with one live payment of 10 000 cents whose level-1 commission is 2 000 cents. */
function refundGateway(options: Parameters<typeof createGateway>[0] = {}) {
  const gateway = createGateway(options);
  const jane = gateway.fake.seed(gateway.product.productId, "jane@example.com");
  const commission = gateway.ledger.seedCommission(jane, {
    amountCents: 2000n,
    paymentAmountCents: 10_000n,
    customerEmail: "buyer@example.com",
  });
  gateway.ledger.externalIds.set("ch_1", commission.id);
  return { ...gateway, jane, commission };
}

const sent = (gateway: ReturnType<typeof createGateway>) => gateway.ledger.requestsOf("refund") as RefundRequest[];
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("POST /api/v1/refunds", () => {
  it("fully refunds by commission_id and answers spec 4.9's body", async () => {
    const gateway = refundGateway();
    const { call, commission, jane, product } = gateway;
    const response = await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(refundResponseSchema, response.json())).toEqual({
      data: {
        commission_id: commission.id,
        partnership_id: jane.id,
        payment_amount_cents: 10_000,
        refund_amount_cents: 10_000,
        previous_commission_cents: 2000,
        new_commission_cents: 0,
        status: "refunded",
        fully_refunded: true,
      },
    });
    expect(response.headers["idempotent-replayed"]).toBeUndefined();
    const [request] = sent(gateway);
    expect(request).toMatchObject({
      productId: product.productId,
      identification: { case: "commissionId", value: commission.id },
    });
    expect(request?.refundAmountCents).toBeUndefined();
    expect(request?.idempotencyKey).toBeUndefined();
    expect(request?.reason).toBeUndefined();
  });

  it("refunds part of a payment by external_id, with a reason, and deducts again without a key", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    const body = { external_id: "ch_1", refund_amount_cents: 2500, reason: "Damaged" };
    const first = expectBody(refundResponseSchema, (await call("POST", "/api/v1/refunds", { body })).json());
    expect(first.data).toMatchObject({
      refund_amount_cents: 2500,
      previous_commission_cents: 2000,
      new_commission_cents: 1500,
      status: "pending",
      fully_refunded: false,
    });
    const second = expectBody(refundResponseSchema, (await call("POST", "/api/v1/refunds", { body })).json());
    expect(second.data).toMatchObject({ previous_commission_cents: 1500, new_commission_cents: 1000 });
    expect(gateway.ledger.refunded.get(commission.id)).toBe(5000n);
    expect(sent(gateway)).toMatchObject([
      { identification: { case: "externalId", value: "ch_1" }, refundAmountCents: 2500n, reason: "Damaged" },
      { identification: { case: "externalId", value: "ch_1" }, refundAmountCents: 2500n, reason: "Damaged" },
    ]);
  });

  it("identifies by email plus payment_amount_cents, email trimmed and lowercased", async () => {
    const gateway = refundGateway();
    const response = await gateway.call("POST", "/api/v1/refunds", {
      body: { email: "  Buyer@Example.COM ", payment_amount_cents: 10_000 },
    });
    expect(response.statusCode).toBe(200);
    expect(expectBody(refundResponseSchema, response.json()).data.commission_id).toBe(gateway.commission.id);
    expect(sent(gateway)).toMatchObject([
      {
        identification: {
          case: "emailAndAmount",
          value: { email: "buyer@example.com", paymentAmountCents: 10_000n },
        },
      },
    ]);
  });

  it("answers status refunded on the partial refund that completes the payment", async () => {
    const { call, commission } = refundGateway();
    await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id, refund_amount_cents: 4000 } });
    const last = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, refund_amount_cents: 6000 },
    });
    expect(expectBody(refundResponseSchema, last.json()).data).toMatchObject({
      new_commission_cents: 0,
      status: "refunded",
      fully_refunded: true,
    });
  });

  it("answers 200 with status rejected and unchanged amounts for a rejected commission", async () => {
    const gateway = refundGateway();
    const rejected = gateway.ledger.seedCommission(gateway.jane, { status: CommissionStatus.REJECTED });
    const response = await gateway.call("POST", "/api/v1/refunds", { body: { commission_id: rejected.id } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(refundResponseSchema, response.json()).data).toMatchObject({
      previous_commission_cents: 2000,
      new_commission_cents: 2000,
      status: "rejected",
      fully_refunded: true,
    });
  });

  describe("identification", () => {
    it.each([
      ["nothing", {}, {}],
      ["only a reason", { reason: "x" }, {}],
      [
        "an email without payment_amount_cents",
        { email: "a@example.com" },
        { payment_amount_cents: ["Required with email"] },
      ],
      [
        "payment_amount_cents without an email",
        { payment_amount_cents: 100 },
        { email: ["Required with payment_amount_cents"] },
      ],
    ])("answers 400 naming the three strategies for %s", async (_case, body, fieldErrors) => {
      const { call, ledger } = refundGateway();
      const response = await call("POST", "/api/v1/refunds", { body });
      expect(response.statusCode).toBe(400);
      expect(expectBody(validationErrorSchema, response.json())).toEqual({
        error: "Validation failed",
        details: { formErrors: [missingStrategyMessage], fieldErrors },
      });
      expect(missingStrategyMessage).toBe(
        "Provide one of commission_id, external_id, or email plus payment_amount_cents",
      );
      expect(ledger.callsOf("refund")).toBe(0);
    });

    it.each([
      ["commission_id and external_id", { commission_id: "com_1", external_id: "ch_1" }],
      [
        "commission_id and email plus amount",
        { commission_id: "com_1", email: "a@example.com", payment_amount_cents: 1 },
      ],
      ["external_id and an email", { external_id: "ch_1", email: "a@example.com" }],
      ["commission_id and payment_amount_cents", { commission_id: "com_1", payment_amount_cents: 1 }],
    ])("answers 400 when more than one is given: %s", async (_case, body) => {
      const { call, ledger } = refundGateway();
      const response = await call("POST", "/api/v1/refunds", { body });
      expect(response.statusCode).toBe(400);
      expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
        formErrors: [severalStrategiesMessage],
        fieldErrors: {},
      });
      expect(ledger.callsOf("refund")).toBe(0);
    });

    it.each([
      ["too long", "r".repeat(501), "Too big: expected string to have <=500 characters"],
      ["of the wrong type", 5, "Invalid input: expected string, received number"],
    ])("names a bad field (%s) and a missing strategy in the same answer", async (_case, reason, message) => {
      const { call } = refundGateway();
      const response = await call("POST", "/api/v1/refunds", { body: { reason } });
      expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
        formErrors: [missingStrategyMessage],
        fieldErrors: { reason: [message] },
      });
    });
  });

  it.each([
    ["a reason over 500 characters", { reason: "r".repeat(501) }, "reason"],
    ["an empty idempotency_key", { idempotency_key: "" }, "idempotency_key"],
    ["an idempotency_key over 128 characters", { idempotency_key: "k".repeat(129) }, "idempotency_key"],
    ["a fractional refund_amount_cents", { refund_amount_cents: 1.5 }, "refund_amount_cents"],
    ["a refund_amount_cents that is a string", { refund_amount_cents: "100" }, "refund_amount_cents"],
    ["an empty commission_id", { commission_id: "" }, "commission_id"],
  ])("answers 400 with the envelope for %s, without calling the ledger", async (_case, extra, field) => {
    const { call, ledger, commission } = refundGateway();
    const body = { commission_id: commission.id, ...extra };
    const response = await call("POST", "/api/v1/refunds", { body });
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual([field]);
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("answers 400 for a bad email or a fractional payment amount", async () => {
    const { call, ledger } = refundGateway();
    const response = await call("POST", "/api/v1/refunds", { body: { email: "nope", payment_amount_cents: 1.5 } });
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors).sort()).toEqual([
      "email",
      "payment_amount_cents",
    ]);
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("answers 400 with the envelope for a body that is not an object", async () => {
    const { call, ledger } = refundGateway();
    const response = await call("POST", "/api/v1/refunds", { body: ["com_1"] });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.formErrors).toEqual([
      "Invalid input: expected object, received array",
    ]);
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("accepts a negative or zero refund_amount_cents and leaves the bounds to the ledger's 422", async () => {
    const { call, commission, ledger } = refundGateway();
    for (const amount of [0, -5, 10_001]) {
      const response = await call("POST", "/api/v1/refunds", {
        body: { commission_id: commission.id, refund_amount_cents: amount },
      });
      expect(response.statusCode, String(amount)).toBe(422);
      expect(expectBody(refundOutOfRangeErrorSchema, response.json())).toEqual({
        error: "refund_amount_cents must be greater than 0 and at most the payment amount",
        details: { payment_amount_cents: 10_000 },
      });
    }
    expect(ledger.callsOf("refund")).toBe(3);
  });

  it("answers 422 with refundable_cents when the refund exceeds what remains", async () => {
    const { call, commission } = refundGateway();
    await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id, refund_amount_cents: 7000 } });
    const response = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, refund_amount_cents: 5000 },
    });
    expect(response.statusCode).toBe(422);
    expect(expectBody(refundOutOfRangeErrorSchema, response.json())).toEqual({
      error: "refund_amount_cents exceeds what remains of the payment",
      details: { payment_amount_cents: 10_000, refundable_cents: 3000 },
    });
  });

  it("answers 404 { error } when no payment matches, including another product's", async () => {
    const gateway = refundGateway();
    const other = gateway.fake.seed(gateway.fake.addProduct("Other").productId, "x@example.com");
    const foreign = gateway.ledger.seedCommission(other);
    for (const body of [
      { commission_id: "com_missing" },
      { commission_id: foreign.id },
      { external_id: "ch_unknown" },
      { email: "buyer@example.com", payment_amount_cents: 9999 },
    ]) {
      const response = await gateway.call("POST", "/api/v1/refunds", { body });
      expect(response.statusCode, JSON.stringify(body)).toBe(404);
      expect(expectBody(errorSchema, response.json())).toEqual({
        error: "No payment matches the identifier for this product",
      });
    }
  });

  it("answers 409 { error, details: { commission_id } } for a payment already fully refunded", async () => {
    const { call, commission } = refundGateway();
    expect((await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id } })).statusCode).toBe(200);
    const retry = await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id } });
    expect(retry.statusCode).toBe(409);
    expect(expectBody(alreadyRefundedErrorSchema, retry.json())).toEqual({
      error: `Commission ${commission.id} is already fully refunded`,
      details: { commission_id: commission.id },
    });
  });

  it("answers 409 { error: 'ambiguous_payment', details: { message } } when email and amount match several payments", async () => {
    const gateway = refundGateway();
    gateway.ledger.seedCommission(gateway.jane, { paymentAmountCents: 10_000n, customerEmail: "buyer@example.com" });
    const response = await gateway.call("POST", "/api/v1/refunds", {
      body: { email: "buyer@example.com", payment_amount_cents: 10_000 },
    });
    expect(response.statusCode).toBe(409);
    expect(expectBody(ambiguousPaymentErrorSchema, response.json())).toEqual({
      error: "ambiguous_payment",
      details: { message: "The email and amount match several payments" },
    });
  });

  it("answers the ledger's field violations as the validation envelope", async () => {
    const { call, ledger, commission } = refundGateway();
    ledger.failures.set("refund", toConnectError(DomainError.invalidField("reason", "At most 500 characters")));
    const response = await call("POST", "/api/v1/refunds", { body: { commission_id: commission.id } });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { reason: ["At most 500 characters"] } },
    });
  });

  it("answers 403 to a test-mode key without calling the ledger", async () => {
    const { call, commission, ledger, product } = refundGateway();
    const response = await call("POST", "/api/v1/refunds", {
      key: product.testKey,
      body: { commission_id: commission.id },
    });
    expect(response.statusCode).toBe(403);
    expect(expectBody(errorSchema, response.json())).toEqual({
      error: "Test-mode keys cannot access the management API",
    });
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("counts against the /api/v1 rate limit", async () => {
    const { call, commission, ledger } = refundGateway({ rateLimitPerMinute: 2 });
    const body = { commission_id: commission.id, refund_amount_cents: 100 };
    expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    expect((await call("POST", "/api/v1/refunds", { body })).statusCode).toBe(200);
    const limited = await call("POST", "/api/v1/refunds", { body });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBeDefined();
    expect(ledger.callsOf("refund")).toBe(1);
  });
});

describe("POST /api/v1/refunds idempotency", () => {
  it("sends the sha256 of the canonical body without the key as the fingerprint", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    await call("POST", "/api/v1/refunds", {
      payload: `{ "refund_amount_cents": 100, "idempotency_key": "k-1",\n  "commission_id": "${commission.id}" }`,
      headers: { "content-type": "application/json" },
    });
    const [request] = sent(gateway);
    expect(request?.idempotencyKey).toBe("k-1");
    expect(request?.requestFingerprint).toBe(sha256(`{"commission_id":"${commission.id}","refund_amount_cents":100}`));
  });

  it("replays the same key and body: same status and body, Idempotent-Replayed: true, refunded once", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    const body = { commission_id: commission.id, refund_amount_cents: 2500, idempotency_key: "refund-1" };
    const first = await call("POST", "/api/v1/refunds", { body });
    const again = await call("POST", "/api/v1/refunds", { body });
    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    expect(again.json()).toEqual(first.json());
    expect(gateway.ledger.refunded.get(commission.id)).toBe(2500n);
  });

  it("treats field order and a key moved between body and header as the same request", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    const first = await call("POST", "/api/v1/refunds", {
      body: { idempotency_key: "refund-2", commission_id: commission.id, refund_amount_cents: 1000, reason: "a" },
    });
    const reordered = await call("POST", "/api/v1/refunds", {
      body: { reason: "a", refund_amount_cents: 1000, commission_id: commission.id },
      headers: { "idempotency-key": "refund-2" },
    });
    const both = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, reason: "a", refund_amount_cents: 1000, idempotency_key: "refund-2" },
      headers: { "idempotency-key": "refund-2" },
    });
    for (const replay of [reordered, both]) {
      expect(replay.statusCode).toBe(200);
      expect(replay.headers["idempotent-replayed"]).toBe("true");
      expect(replay.json()).toEqual(first.json());
    }
    expect(gateway.ledger.refunded.get(commission.id)).toBe(1000n);
    const fingerprints = new Set(sent(gateway).map((request) => request.requestFingerprint));
    expect(fingerprints.size).toBe(1);
  });

  it("answers 409 { error } when the key was used with a different body", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    const body = { commission_id: commission.id, refund_amount_cents: 1000 };
    await call("POST", "/api/v1/refunds", { body, headers: { "idempotency-key": "refund-3" } });
    const different = await call("POST", "/api/v1/refunds", {
      body: { ...body, refund_amount_cents: 2000 },
      headers: { "idempotency-key": "refund-3" },
    });
    expect(different.statusCode).toBe(409);
    expect(expectBody(errorSchema, different.json())).toEqual({
      error: "This idempotency key was already used with a different request body",
    });
    expect(gateway.ledger.refunded.get(commission.id)).toBe(1000n);
  });

  it("answers 409 { error, details.reason } while the key's first request is still in progress", async () => {
    const { call, commission, ledger } = refundGateway();
    ledger.failures.set(
      "refund",
      toConnectError(
        DomainError.withInfo("aborted", "A request with this idempotency key is still in progress; retry later", {
          reason: "idempotency_key_in_progress",
          details: { reason: "idempotency_key_in_progress" },
        }),
      ),
    );
    const response = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, idempotency_key: "refund-4" },
    });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toEqual({
      error: "A request with this idempotency key is still in progress; retry later",
      details: { reason: "idempotency_key_in_progress" },
    });
  });

  it("answers 400 fieldErrors.idempotency_key when the header and the body's key differ", async () => {
    const { call, commission, ledger } = refundGateway();
    const response = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, idempotency_key: "body-key" },
      headers: { "idempotency-key": "header-key" },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { idempotency_key: [keyMismatchMessage] } },
    });
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("answers 400 fieldErrors.idempotency_key for a header key over 128 characters", async () => {
    const { call, commission, ledger } = refundGateway();
    const response = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id },
      headers: { "idempotency-key": "k".repeat(129) },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.fieldErrors).toEqual({
      idempotency_key: ["Idempotency-Key header: Too big: expected string to have <=128 characters"],
    });
    expect(ledger.callsOf("refund")).toBe(0);
  });

  it("does not reserve a key for a request refused by validation", async () => {
    const gateway = refundGateway();
    const { call, commission } = gateway;
    const refused = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, reason: "r".repeat(501) },
      headers: { "idempotency-key": "refund-5" },
    });
    expect(refused.statusCode).toBe(400);
    const accepted = await call("POST", "/api/v1/refunds", {
      body: { commission_id: commission.id, reason: "corrected" },
      headers: { "idempotency-key": "refund-5" },
    });
    expect(accepted.statusCode).toBe(200);
    expect(accepted.headers["idempotent-replayed"]).toBeUndefined();
    expect(sent(gateway)).toHaveLength(1);
  });
});
