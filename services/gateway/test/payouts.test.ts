import { PayoutAction, PayoutStatus, type UpdatePayoutRequest } from "@affiliate/proto/payouts";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  generatePayoutsResponseSchema,
  invalidPayoutActionMessage,
  payoutListResponseSchema,
  payoutResponseSchema,
} from "@affiliate/rest-shapes/schemas/payouts";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { capturingLogger, createGateway, expectBody } from "./support/harness.js";

function payoutsGateway(options: Parameters<typeof createGateway>[0] = {}) {
  const gateway = createGateway(options);
  const jane = gateway.fake.seed(gateway.product.productId, "jane@example.com");
  const sam = gateway.fake.seed(gateway.product.productId, "sam@example.com");
  return { ...gateway, jane, sam };
}

const updates = (gateway: ReturnType<typeof createGateway>) =>
  gateway.payouts.requestsOf("updatePayout") as UpdatePayoutRequest[];

describe("GET /api/v1/payouts/:id", () => {
  it("answers contract 8's fields, nulls for what is unset, the affiliate from partners", async () => {
    const { call, fake, jane, payouts, product } = payoutsGateway();
    const payout = payouts.seedPayout(jane, {
      amountCents: 4500n,
      adjustmentCents: -1500n,
      commissionCount: 4n,
      createdAt: timestampFromDate(new Date("2025-03-01T00:00:00.123Z")),
    });
    const response = await call("GET", `/api/v1/payouts/${payout.id}`);
    expect(response.statusCode).toBe(200);
    expect(expectBody(payoutResponseSchema, response.json())).toEqual({
      data: {
        id: payout.id,
        status: "pending",
        amount_cents: 4500,
        adjustment_cents: -1500,
        partnership_id: jane.id,
        affiliate: { id: jane.affiliate?.id, email: "jane@example.com", name: "" },
        commission_count: 4,
        created_at: "2025-03-01T00:00:00.123Z",
        approved_at: null,
        paid_at: null,
        gateway_transfer_id: null,
      },
    });
    expect(payouts.requestsOf("getPayout")).toMatchObject([{ productId: product.productId, payoutId: payout.id }]);
    expect(fake.requestsOf("batchGetPartnerships")).toMatchObject([
      { productId: product.productId, partnershipIds: [jane.id] },
    ]);
  });

  it("writes the approval, payment and transfer reference of a completed payout", async () => {
    const { call, jane, payouts } = payoutsGateway();
    const payout = payouts.seedPayout(jane, {
      status: PayoutStatus.COMPLETED,
      approvedAt: timestampFromDate(new Date("2025-03-02T00:00:00.000Z")),
      paidAt: timestampFromDate(new Date("2025-03-03T00:00:00.000Z")),
      gatewayTransferId: "tr_123",
    });
    const body = expectBody(payoutResponseSchema, (await call("GET", `/api/v1/payouts/${payout.id}`)).json());
    expect(body.data).toMatchObject({
      status: "completed",
      approved_at: "2025-03-02T00:00:00.000Z",
      paid_at: "2025-03-03T00:00:00.000Z",
      gateway_transfer_id: "tr_123",
    });
  });

  it("answers 404 { error } for a missing payout or another product's", async () => {
    const { call, fake, payouts } = payoutsGateway();
    const foreign = payouts.seedPayout(fake.seed(fake.addProduct("Other").productId, "x@example.com"));
    for (const id of ["po_missing", foreign.id]) {
      const response = await call("GET", `/api/v1/payouts/${id}`);
      expect(response.statusCode).toBe(404);
      expect(expectBody(errorSchema, response.json())).toEqual({ error: `Payout ${id} not found` });
    }
    expect(fake.callsOf("batchGetPartnerships")).toBe(0);
  });

  it("answers 500 and logs when partners does not know the payout's partnership", async () => {
    const { logger, lines } = capturingLogger();
    const { call, fake, jane, payouts } = payoutsGateway({ logger });
    const payout = payouts.seedPayout(jane);
    fake.partnerships.delete(jane.id);
    const response = await call("GET", `/api/v1/payouts/${payout.id}`);
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Internal server error" });
    const logged = lines().find((line) => line.msg === "unhandled error");
    expect(JSON.stringify(logged?.err)).toContain(`partnership ${jane.id} of payout ${payout.id}`);
  });

  it("answers 403 for a test-mode key without asking payouts", async () => {
    const { call, payouts, product } = payoutsGateway();
    const response = await call("GET", "/api/v1/payouts/po_1", { key: product.testKey });
    expect(response.statusCode).toBe(403);
    expect(payouts.calls.size).toBe(0);
  });
});

describe("GET /api/v1/payouts", () => {
  it("pages newest first and composes affiliates with one BatchGetPartnerships call per page", async () => {
    const { call, fake, jane, payouts, product, sam } = payoutsGateway();
    const seeded = [jane, sam, jane, jane, sam].map((partnership) => payouts.seedPayout(partnership));
    payouts.seedPayout(fake.seed(fake.addProduct("Other").productId, "x@example.com"));

    const first = expectBody(payoutListResponseSchema, (await call("GET", "/api/v1/payouts?limit=4")).json());
    expect(first.data.map((p) => [p.id, p.affiliate.email])).toEqual([
      [seeded[4]?.id, "sam@example.com"],
      [seeded[3]?.id, "jane@example.com"],
      [seeded[2]?.id, "jane@example.com"],
      [seeded[1]?.id, "sam@example.com"],
    ]);
    expect(first.pagination).toEqual({ next_cursor: expect.any(String), has_more: true });
    expect(fake.requestsOf("batchGetPartnerships")).toEqual([
      expect.objectContaining({ productId: product.productId, partnershipIds: [sam.id, jane.id] }),
    ]);

    const second = expectBody(
      payoutListResponseSchema,
      (await call("GET", `/api/v1/payouts?limit=4&cursor=${first.pagination.next_cursor}`)).json(),
    );
    expect(second.data.map((p) => p.id)).toEqual([seeded[0]?.id]);
    expect(second.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(fake.callsOf("batchGetPartnerships")).toBe(2);
    expect(payouts.requestsOf("listPayouts")).toMatchObject([
      { productId: product.productId, pageSize: 4, pageToken: "", status: PayoutStatus.UNSPECIFIED },
      { productId: product.productId, pageSize: 4, pageToken: first.pagination.next_cursor },
    ]);
  });

  it.each([
    ["pending", PayoutStatus.PENDING],
    ["approved", PayoutStatus.APPROVED],
    ["failed", PayoutStatus.FAILED],
    ["processing", PayoutStatus.PROCESSING],
    ["completed", PayoutStatus.COMPLETED],
  ])("filters by status %s and partnership, page size 50 by default", async (name, status) => {
    const { call, jane, payouts, sam } = payoutsGateway();
    const match = payouts.seedPayout(jane, { status });
    payouts.seedPayout(sam, { status });
    payouts.seedPayout(jane, { status: status === PayoutStatus.PENDING ? PayoutStatus.FAILED : PayoutStatus.PENDING });
    const response = await call("GET", `/api/v1/payouts?status=${name}&partnership_id=${jane.id}`);
    const body = expectBody(payoutListResponseSchema, response.json());
    expect(body.data.map((p) => [p.id, p.status])).toEqual([[match.id, name]]);
    expect(payouts.requestsOf("listPayouts")).toMatchObject([{ pageSize: 50, status, partnershipId: jane.id }]);
  });

  it("answers an empty page without asking partners", async () => {
    const { call, fake } = payoutsGateway();
    const body = expectBody(payoutListResponseSchema, (await call("GET", "/api/v1/payouts")).json());
    expect(body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
    expect(fake.callsOf("batchGetPartnerships")).toBe(0);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["status=rejected", "status"],
    ["status=paid", "status"],
    ["partnership_id=", "partnership_id"],
  ])("answers 400 with the envelope for %s, without asking payouts", async (query, field) => {
    const { call, payouts } = payoutsGateway();
    const response = await call("GET", `/api/v1/payouts?${query}`);
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual([field]);
    expect(payouts.callsOf("listPayouts")).toBe(0);
  });

  it("answers 400 fieldErrors.cursor when payouts rejects the cursor", async () => {
    const { call } = payoutsGateway();
    const response = await call("GET", "/api/v1/payouts?cursor=forged");
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
      formErrors: [],
      fieldErrors: { cursor: ["The cursor was not issued by this API"] },
    });
  });
});

describe("POST /api/v1/payouts/generate", () => {
  it("answers the payouts this call created, affiliates composed in one call", async () => {
    const { call, fake, jane, payouts, product, sam } = payoutsGateway();
    payouts.balances = [
      { partnership: jane, amountCents: 7000n, adjustmentCents: -500n, commissionCount: 3n },
      { partnership: sam, amountCents: 5000n, commissionCount: 1n },
    ];
    const response = await call("POST", "/api/v1/payouts/generate");
    expect(response.statusCode).toBe(200);
    const body = expectBody(generatePayoutsResponseSchema, response.json());
    expect(
      body.data.map((p) => [p.status, p.amount_cents, p.adjustment_cents, p.commission_count, p.affiliate.email]),
    ).toEqual([
      ["pending", 7000, -500, 3, "jane@example.com"],
      ["pending", 5000, 0, 1, "sam@example.com"],
    ]);
    expect(payouts.requestsOf("generatePayouts")).toMatchObject([{ productId: product.productId }]);
    // A long deadline: generation for a large program takes more than the default 5 s.
    expect(payouts.lastGenerationDeadlineMs).toBeGreaterThan(5 * 60 * 1000);
    expect(fake.requestsOf("batchGetPartnerships")).toMatchObject([{ partnershipIds: [jane.id, sam.id] }]);

    // Nothing due any more: an empty list, partners not asked.
    const again = await call("POST", "/api/v1/payouts/generate", { body: {} });
    expect(again.statusCode).toBe(200);
    expect(expectBody(generatePayoutsResponseSchema, again.json())).toEqual({ data: [] });
    expect(fake.callsOf("batchGetPartnerships")).toBe(1);
  });

  it("composes the affiliates of a generation larger than one partners batch, 100 ids per call", async () => {
    const { call, fake, payouts, product } = payoutsGateway();
    const partnerships = Array.from({ length: 250 }, (_, i) =>
      fake.seed(product.productId, `affiliate-${i}@example.com`),
    );
    payouts.balances = partnerships.map((partnership) => ({ partnership, amountCents: 1000n, commissionCount: 1n }));

    const response = await call("POST", "/api/v1/payouts/generate");

    expect(response.statusCode).toBe(200);
    const body = expectBody(generatePayoutsResponseSchema, response.json());
    expect(body.data.map((p) => p.affiliate.email)).toEqual(partnerships.map((_, i) => `affiliate-${i}@example.com`));
    const calls = fake.requestsOf("batchGetPartnerships") as { partnershipIds: string[] }[];
    expect(calls.map((c) => c.partnershipIds.length)).toEqual([100, 100, 50]);
  });

  it("answers 400 with the envelope for a body with fields, without asking payouts", async () => {
    const { call, payouts } = payoutsGateway();
    const response = await call("POST", "/api/v1/payouts/generate", { body: { partnership_id: "ptn_1" } });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.formErrors).toEqual([
      "Unknown field partnership_id",
    ]);
    expect(payouts.callsOf("generatePayouts")).toBe(0);
  });

  it("answers 403 for a test-mode key", async () => {
    const { call, payouts, product } = payoutsGateway();
    const response = await call("POST", "/api/v1/payouts/generate", { key: product.testKey });
    expect(response.statusCode).toBe(403);
    expect(payouts.callsOf("generatePayouts")).toBe(0);
  });
});

describe("PATCH /api/v1/payouts/:id", () => {
  it("approves a pending payout: status approved, approved_at set", async () => {
    const gateway = payoutsGateway();
    const { call, jane, payouts, product } = gateway;
    const payout = payouts.seedPayout(jane);
    const response = await call("PATCH", `/api/v1/payouts/${payout.id}`, { body: { action: "approve" } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(payoutResponseSchema, response.json()).data).toMatchObject({
      id: payout.id,
      status: "approved",
      approved_at: "2025-03-04T05:06:07.890Z",
      affiliate: { email: "jane@example.com" },
    });
    expect(updates(gateway)).toMatchObject([
      { productId: product.productId, payoutId: payout.id, action: PayoutAction.APPROVE },
    ]);
    expect(updates(gateway)[0]?.reference).toBeUndefined();
  });

  it("marks an approved payout paid with its reference as gateway_transfer_id", async () => {
    const gateway = payoutsGateway();
    const payout = gateway.payouts.seedPayout(gateway.jane, { status: PayoutStatus.APPROVED });
    const response = await gateway.call("PATCH", `/api/v1/payouts/${payout.id}`, {
      body: { action: "mark_paid", reference: "tr_987" },
    });
    expect(response.statusCode).toBe(200);
    expect(expectBody(payoutResponseSchema, response.json()).data).toMatchObject({
      status: "completed",
      paid_at: "2025-03-04T05:06:07.890Z",
      gateway_transfer_id: "tr_987",
    });
    expect(updates(gateway)).toMatchObject([{ action: PayoutAction.MARK_PAID, reference: "tr_987" }]);
  });

  it("answers a rejected payout with status rejected; it is gone afterwards", async () => {
    const gateway = payoutsGateway();
    const payout = gateway.payouts.seedPayout(gateway.jane, { amountCents: 6000n });
    const response = await gateway.call("PATCH", `/api/v1/payouts/${payout.id}`, { body: { action: "reject" } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(payoutResponseSchema, response.json()).data).toMatchObject({
      id: payout.id,
      status: "rejected",
      amount_cents: 6000,
    });
    expect(updates(gateway)).toMatchObject([{ action: PayoutAction.REJECT }]);
    expect((await gateway.call("GET", `/api/v1/payouts/${payout.id}`)).statusCode).toBe(404);
  });

  it.each([
    ["reference", { action: "mark_failed", reference: "Bank refused" }],
    ["reason", { action: "mark_failed", reason: "Bank refused" }],
    ["both, equal", { action: "mark_failed", reason: "Bank refused", reference: "Bank refused" }],
  ])("marks an approved payout failed with the failure reason given as %s", async (_case, body) => {
    const gateway = payoutsGateway();
    const payout = gateway.payouts.seedPayout(gateway.jane, { status: PayoutStatus.APPROVED });
    const response = await gateway.call("PATCH", `/api/v1/payouts/${payout.id}`, { body });
    expect(response.statusCode).toBe(200);
    expect(expectBody(payoutResponseSchema, response.json()).data.status).toBe("failed");
    expect(updates(gateway)).toMatchObject([{ action: PayoutAction.MARK_FAILED, reference: "Bank refused" }]);
    expect(gateway.payouts.payouts.get(payout.id)?.failureReason).toBe("Bank refused");
  });

  it("does not send a reason as the reference of another action", async () => {
    const gateway = payoutsGateway();
    const payout = gateway.payouts.seedPayout(gateway.jane, { status: PayoutStatus.APPROVED });
    const response = await gateway.call("PATCH", `/api/v1/payouts/${payout.id}`, {
      body: { action: "mark_paid", reason: "not a reference" },
    });
    expect(expectBody(payoutResponseSchema, response.json()).data.gateway_transfer_id).toBeNull();
    expect(updates(gateway)[0]?.reference).toBeUndefined();
  });

  it.each([
    ["approve", PayoutStatus.COMPLETED, "Payout must be in pending or failed state to approve"],
    ["reject", PayoutStatus.APPROVED, "Payout must be in pending state to reject"],
    ["mark_paid", PayoutStatus.PENDING, "Payout must be in approved state to mark as paid"],
    ["mark_failed", PayoutStatus.FAILED, "Payout must be in approved state to mark as failed"],
  ])(
    "answers 400 { error } with the payouts service's message for %s from a wrong state",
    async (action, status, message) => {
      const { call, jane, payouts } = payoutsGateway();
      const payout = payouts.seedPayout(jane, { status });
      const response = await call("PATCH", `/api/v1/payouts/${payout.id}`, { body: { action } });
      expect(response.statusCode).toBe(400);
      expect(expectBody(errorSchema, response.json())).toEqual({ error: message });
      expect(payouts.payouts.get(payout.id)?.status).toBe(status);
    },
  );

  it.each([
    ["an unknown action", { action: "pay" }],
    ["no action", { reference: "tr_1" }],
    ["an action that is not a string", { action: 1 }],
    ["an unknown action with a bad reference", { action: "pay", reference: "r".repeat(501) }],
  ])("answers 400 { error } (not the envelope) for %s, without asking payouts", async (_case, body) => {
    const { call, payouts } = payoutsGateway();
    const response = await call("PATCH", "/api/v1/payouts/po_1", { body });
    expect(response.statusCode).toBe(400);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: invalidPayoutActionMessage });
    expect(invalidPayoutActionMessage).toBe("Invalid action: must be approve, reject, mark_paid or mark_failed");
    expect(payouts.callsOf("updatePayout")).toBe(0);
  });

  it.each([
    ["a reference over 500 characters", { action: "mark_paid", reference: "r".repeat(501) }, "reference"],
    ["a reason over 500 characters", { action: "mark_failed", reason: "r".repeat(501) }, "reason"],
    ["a reason that differs from the reference", { action: "mark_failed", reason: "a", reference: "b" }, "reason"],
  ])("answers 400 with the envelope for %s", async (_case, body, field) => {
    const { call, payouts } = payoutsGateway();
    const response = await call("PATCH", "/api/v1/payouts/po_1", { body });
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual([field]);
    expect(payouts.callsOf("updatePayout")).toBe(0);
  });

  it("answers 400 with the envelope for a body that is not an object", async () => {
    const { call, payouts } = payoutsGateway();
    const response = await call("PATCH", "/api/v1/payouts/po_1", { body: ["approve"] });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).error).toBe("Validation failed");
    expect(payouts.callsOf("updatePayout")).toBe(0);
  });

  it("accepts a reference of exactly 500 characters", async () => {
    const { call, jane, payouts } = payoutsGateway();
    const payout = payouts.seedPayout(jane, { status: PayoutStatus.APPROVED });
    const response = await call("PATCH", `/api/v1/payouts/${payout.id}`, {
      body: { action: "mark_paid", reference: "r".repeat(500) },
    });
    expect(response.statusCode).toBe(200);
  });

  it("answers 404 { error } for another product's payout and leaves it alone", async () => {
    const { call, fake, payouts } = payoutsGateway();
    const foreign = payouts.seedPayout(fake.seed(fake.addProduct("Other").productId, "x@example.com"));
    const response = await call("PATCH", `/api/v1/payouts/${foreign.id}`, { body: { action: "approve" } });
    expect(response.statusCode).toBe(404);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: `Payout ${foreign.id} not found` });
    expect(payouts.payouts.get(foreign.id)?.status).toBe(PayoutStatus.PENDING);
  });

  it("answers 403 for a test-mode key", async () => {
    const { call, payouts, product } = payoutsGateway();
    const response = await call("PATCH", "/api/v1/payouts/po_1", { key: product.testKey, body: { action: "approve" } });
    expect(response.statusCode).toBe(403);
    expect(payouts.callsOf("updatePayout")).toBe(0);
  });
});
