import {
  CommissionAction,
  CommissionStatus,
  FraudFlagSchema,
  HoldReason,
  ReviewDecision,
} from "@affiliate/proto/ledger";
import { commissionListResponseSchema, commissionResponseSchema } from "@affiliate/rest-shapes/schemas/commissions";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { createGateway, expectBody } from "./support/harness.js";

describe("GET /api/v1/commissions/:id", () => {
  it("answers the commission in spec 2.2's fields, with its affiliate from partners", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const parent = ledger.seedCommission(jane);
    const commission = ledger.seedCommission(jane, {
      level: 2,
      parentCommissionId: parent.id,
      amountCents: 500n,
      status: CommissionStatus.PAID,
      payoutId: "po_1",
      paymentAmountCents: 10_000n,
      holdUntil: timestampFromDate(new Date("2025-04-03T05:06:07.890Z")),
      createdAt: timestampFromDate(new Date("2025-03-04T05:06:07.123Z")),
    });

    const response = await call("GET", `/api/v1/commissions/${commission.id}`);
    expect(response.statusCode).toBe(200);
    expect(expectBody(commissionResponseSchema, response.json())).toEqual({
      data: {
        id: commission.id,
        amount_cents: 500,
        status: "paid",
        level: 2,
        parent_commission_id: parent.id,
        hold_until: "2025-04-03T05:06:07.890Z",
        created_at: "2025-03-04T05:06:07.123Z",
        affiliate: { id: jane.affiliate?.id, email: "jane@example.com", name: "" },
        referral_code: jane.referralCode,
        customer_email: "buyer@example.com",
        payment_amount_cents: 10_000,
        payout_id: "po_1",
        hold_reason: null,
        flags: [],
        review: null,
        rule: null,
        attribution: null,
      },
    });
    expect(ledger.requestsOf("getCommission")).toMatchObject([
      { productId: product.productId, commissionId: commission.id },
    ]);
    expect(fake.requestsOf("batchGetPartnerships")).toMatchObject([
      { productId: product.productId, partnershipIds: [jane.id] },
    ]);
  });

  it("writes null for a level-1 commission's parent, an erased email and a missing payout", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const commission = ledger.seedCommission(jane, { customerEmail: undefined });
    const body = expectBody(
      commissionResponseSchema,
      (await call("GET", `/api/v1/commissions/${commission.id}`)).json(),
    );
    expect(body.data).toMatchObject({ level: 1, parent_commission_id: null, customer_email: null, payout_id: null });
  });

  it("writes hold_reason dispute for a commission its payment's dispute holds", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const commission = ledger.seedCommission(jane, { holdReason: HoldReason.DISPUTE });
    const response = await call("GET", `/api/v1/commissions/${commission.id}`);
    expect(expectBody(commissionResponseSchema, response.json()).data.hold_reason).toBe("dispute");
    const list = await call("GET", "/api/v1/commissions");
    expect(expectBody(commissionListResponseSchema, list.json()).data.map((c) => c.hold_reason)).toEqual(["dispute"]);
  });

  it("answers 404 { error } for a missing commission or another product's", async () => {
    const { call, fake, ledger } = createGateway();
    const other = fake.seed(fake.addProduct("Other").productId, "x@example.com");
    const foreign = ledger.seedCommission(other);
    for (const id of ["com_missing", foreign.id]) {
      const response = await call("GET", `/api/v1/commissions/${id}`);
      expect(response.statusCode).toBe(404);
      expect(expectBody(errorSchema, response.json())).toEqual({ error: `Commission ${id} not found` });
    }
    expect(fake.callsOf("batchGetPartnerships")).toBe(0);
  });

  it("answers 500 when partners does not know the commission's partnership", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const commission = ledger.seedCommission(jane);
    fake.partnerships.delete(jane.id);
    const response = await call("GET", `/api/v1/commissions/${commission.id}`);
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Internal server error" });
  });

  it("answers 403 for a test-mode key", async () => {
    const { call, ledger, product } = createGateway();
    const response = await call("GET", "/api/v1/commissions/com_1", { key: product.testKey });
    expect(response.statusCode).toBe(403);
    expect(ledger.callsOf("getCommission")).toBe(0);
  });
});

describe("GET /api/v1/commissions", () => {
  it("pages newest first and composes affiliates with one BatchGetPartnerships call per page", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const sam = fake.seed(product.productId, "sam@example.com");
    const seeded = [jane, sam, jane, jane, sam].map((partnership) => ledger.seedCommission(partnership));
    ledger.seedCommission(fake.seed(fake.addProduct("Other").productId, "x@example.com"));

    const first = await call("GET", "/api/v1/commissions?limit=4");
    expect(first.statusCode).toBe(200);
    const page1 = expectBody(commissionListResponseSchema, first.json());
    expect(page1.data.map((c) => [c.id, c.affiliate.email])).toEqual([
      [seeded[4]?.id, "sam@example.com"],
      [seeded[3]?.id, "jane@example.com"],
      [seeded[2]?.id, "jane@example.com"],
      [seeded[1]?.id, "sam@example.com"],
    ]);
    expect(page1.pagination).toEqual({ next_cursor: expect.any(String), has_more: true });
    expect(fake.requestsOf("batchGetPartnerships")).toEqual([
      expect.objectContaining({ productId: product.productId, partnershipIds: [sam.id, jane.id] }),
    ]);

    const second = await call("GET", `/api/v1/commissions?limit=4&cursor=${page1.pagination.next_cursor}`);
    const page2 = expectBody(commissionListResponseSchema, second.json());
    expect(page2.data.map((c) => c.id)).toEqual([seeded[0]?.id]);
    expect(page2.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(fake.callsOf("batchGetPartnerships")).toBe(2);
    expect(ledger.requestsOf("listCommissions")).toMatchObject([
      { productId: product.productId, pageSize: 4, pageToken: "", status: CommissionStatus.UNSPECIFIED },
      { productId: product.productId, pageSize: 4, pageToken: page1.pagination.next_cursor },
    ]);
  });

  it("passes the filters to the ledger and defaults the page size to 50", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const approved = ledger.seedCommission(jane, { status: CommissionStatus.APPROVED, payoutId: "po_9" });
    ledger.seedCommission(jane);
    const response = await call("GET", `/api/v1/commissions?status=approved&partnership_id=${jane.id}&payout_id=po_9`);
    expect(response.statusCode).toBe(200);
    const body = expectBody(commissionListResponseSchema, response.json());
    expect(body.data.map((c) => [c.id, c.status, c.payout_id])).toEqual([[approved.id, "approved", "po_9"]]);
    expect(ledger.requestsOf("listCommissions")).toMatchObject([
      { pageSize: 50, status: CommissionStatus.APPROVED, partnershipId: jane.id, payoutId: "po_9" },
    ]);
  });

  it("answers an empty page without asking partners", async () => {
    const { call, fake } = createGateway();
    const body = expectBody(commissionListResponseSchema, (await call("GET", "/api/v1/commissions")).json());
    expect(body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
    expect(fake.callsOf("batchGetPartnerships")).toBe(0);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=abc", "limit"],
    ["status=void", "status"],
    ["partnership_id=", "partnership_id"],
    ["payout_id=", "payout_id"],
  ])("answers 400 with the envelope for %s, without calling the ledger", async (query, field) => {
    const { call, ledger } = createGateway();
    const response = await call("GET", `/api/v1/commissions?${query}`);
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual([field]);
    expect(ledger.callsOf("listCommissions")).toBe(0);
  });

  it("answers 400 fieldErrors.cursor when the ledger rejects the cursor", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/commissions?cursor=forged");
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: {
        formErrors: [],
        fieldErrors: { cursor: ["Invalid cursor: pass next_cursor from a previous page unchanged"] },
      },
    });
  });
});

describe("PATCH /api/v1/commissions/:id", () => {
  it("approves a pending commission and answers it with its affiliate", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const pending = ledger.seedCommission(jane);
    const response = await call("PATCH", `/api/v1/commissions/${pending.id}`, { body: { action: "approve" } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(commissionResponseSchema, response.json()).data).toMatchObject({
      id: pending.id,
      status: "approved",
      affiliate: { email: "jane@example.com" },
    });
    expect(ledger.requestsOf("updateCommission")).toEqual([
      expect.objectContaining({
        productId: product.productId,
        commissionId: pending.id,
        action: CommissionAction.APPROVE,
      }),
    ]);
    const [sent] = ledger.requestsOf("updateCommission") as { reason?: string }[];
    expect(sent?.reason).toBeUndefined();
  });

  it("rejects with a reason", async () => {
    const { call, fake, ledger, product } = createGateway();
    const pending = ledger.seedCommission(fake.seed(product.productId, "jane@example.com"));
    const response = await call("PATCH", `/api/v1/commissions/${pending.id}`, {
      body: { action: "reject", reason: "Self-referral" },
    });
    expect(response.statusCode).toBe(200);
    expect(expectBody(commissionResponseSchema, response.json()).data.status).toBe("rejected");
    expect(ledger.requestsOf("updateCommission")).toMatchObject([
      { action: CommissionAction.REJECT, reason: "Self-referral" },
    ]);
    expect(ledger.commissions.get(pending.id)?.reason).toBe("Self-referral");
  });

  it("answers 400 { error } with the ledger's message for a transition it refuses", async () => {
    const { call, fake, ledger, product } = createGateway();
    const paid = ledger.seedCommission(fake.seed(product.productId, "jane@example.com"), {
      status: CommissionStatus.PAID,
    });
    const response = await call("PATCH", `/api/v1/commissions/${paid.id}`, { body: { action: "approve" } });
    expect(response.statusCode).toBe(400);
    expect(expectBody(errorSchema, response.json())).toEqual({
      error: "Only a pending commission can be approved; this one is paid",
    });
  });

  it.each([
    ["an unknown action", { action: "pay" }, "action"],
    ["no action", { reason: "x" }, "action"],
    ["a reason over 500 characters", { action: "reject", reason: "r".repeat(501) }, "reason"],
    ["a reason that is not a string", { action: "reject", reason: 5 }, "reason"],
  ])("answers 400 with the envelope for %s, without calling the ledger", async (_case, body, field) => {
    const { call, ledger } = createGateway();
    const response = await call("PATCH", "/api/v1/commissions/com_1", { body });
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual([field]);
    expect(ledger.callsOf("updateCommission")).toBe(0);
  });

  it("accepts a reason of exactly 500 characters", async () => {
    const { call, fake, ledger, product } = createGateway();
    const pending = ledger.seedCommission(fake.seed(product.productId, "jane@example.com"));
    const response = await call("PATCH", `/api/v1/commissions/${pending.id}`, {
      body: { action: "reject", reason: "r".repeat(500) },
    });
    expect(response.statusCode).toBe(200);
  });

  it("answers 404 { error } for another product's commission", async () => {
    const { call, fake, ledger } = createGateway();
    const foreign = ledger.seedCommission(fake.seed(fake.addProduct("Other").productId, "x@example.com"));
    const response = await call("PATCH", `/api/v1/commissions/${foreign.id}`, { body: { action: "approve" } });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: `Commission ${foreign.id} not found` });
    expect(ledger.commissions.get(foreign.id)?.status).toBe(CommissionStatus.PENDING);
  });
});

describe("the review of flagged commissions (contract section 18)", () => {
  const flag = create(FraudFlagSchema, { signal: "self_referral", evidenceJson: '{"match":"email"}' });

  it("lists the queue with flagged=true and shows each flag with its evidence", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const held = ledger.seedCommission(jane, { holdReason: HoldReason.REVIEW, flags: [flag] });
    ledger.seedCommission(jane);
    const response = await call("GET", "/api/v1/commissions?flagged=true");
    expect(response.statusCode).toBe(200);
    const page = expectBody(commissionListResponseSchema, response.json());
    expect(page.data.map((c) => [c.id, c.hold_reason, c.flags])).toEqual([
      [held.id, "review", [{ signal: "self_referral", evidence: { match: "email" } }]],
    ]);
    expect(ledger.requestsOf("listCommissions")).toMatchObject([{ flagged: true }]);
    expect((await call("GET", "/api/v1/commissions?flagged=false")).json().data).toHaveLength(2);
    const bad = await call("GET", "/api/v1/commissions?flagged=yes");
    expect(bad.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, bad.json()).details.fieldErrors)).toEqual(["flagged"]);
  });

  it("decides with the note and the masked key, and answers the commission with its review", async () => {
    const { call, fake, ledger, product } = createGateway();
    const held = ledger.seedCommission(fake.seed(product.productId, "jane@example.com"), {
      holdReason: HoldReason.REVIEW,
      flags: [flag],
    });
    const response = await call("POST", `/api/v1/commissions/${held.id}/review`, {
      body: { decision: "reject", note: "own purchase" },
    });
    expect(response.statusCode).toBe(200);
    const data = expectBody(commissionResponseSchema, response.json()).data;
    expect([data.status, data.hold_reason, data.review?.decision, data.review?.note]).toEqual([
      "rejected",
      null,
      "reject",
      "own purchase",
    ]);
    const [sent] = ledger.requestsOf("reviewCommission") as { decision: number; note: string; key: string }[];
    expect([sent?.decision, sent?.note]).toEqual([ReviewDecision.REJECT, "own purchase"]);
    expect(sent?.key).toMatch(/^sk_live_….{4}$/);
    expect(sent?.key).toBe(`sk_live_…${product.liveKey.slice(-4)}`);
  });

  it("answers 400 for a commission not flagged, 409 for a second review, and refuses a bad body unsent", async () => {
    const { call, fake, ledger, product } = createGateway();
    const jane = fake.seed(product.productId, "jane@example.com");
    const plain = ledger.seedCommission(jane);
    expect(
      (await call("POST", `/api/v1/commissions/${plain.id}/review`, { body: { decision: "approve" } })).statusCode,
    ).toBe(400);
    const held = ledger.seedCommission(jane, { holdReason: HoldReason.REVIEW, flags: [flag] });
    expect(
      (await call("POST", `/api/v1/commissions/${held.id}/review`, { body: { decision: "approve" } })).statusCode,
    ).toBe(200);
    const again = await call("POST", `/api/v1/commissions/${held.id}/review`, { body: { decision: "reject" } });
    expect(again.statusCode).toBe(409);
    const calls = ledger.callsOf("reviewCommission");
    for (const body of [{ decision: "maybe" }, { note: "x" }, { decision: "approve", note: "n".repeat(501) }]) {
      const refused = await call("POST", `/api/v1/commissions/${held.id}/review`, { body });
      expect(refused.statusCode).toBe(400);
    }
    expect(ledger.callsOf("reviewCommission")).toBe(calls);
  });
});
