import { FraudAction } from "@affiliate/proto/partners";
import { validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { programResponseSchema } from "@affiliate/rest-shapes/schemas/program";
import { describe, expect, it } from "vitest";
import { createGateway, expectBody } from "./support/harness.js";

describe("GET /api/v1/program", () => {
  it("answers the product's settings in snake_case, wrapped in data", async () => {
    const { call, product } = createGateway();
    const response = await call("GET", "/api/v1/program");
    expect(response.statusCode).toBe(200);
    expect(expectBody(programResponseSchema, response.json())).toEqual({
      data: {
        product_id: product.productId,
        name: "Acme",
        commission_rate_bps: 2000,
        tier2_rate_bps: 500,
        hold_days: 30,
        payout_minimum_cents: 5000,
        attribution_window_days: 60,
        auto_approve: true,
        currency: "usd",
        commission_type: "percent",
        commission_flat_cents: 0,
        max_commission_months: null,
        max_commission_payments: null,
        referral_url_template: null,
        fraud: {
          self_referral: "flag",
          refund_rate: "flag",
          duplicate_click: "flag",
          bot: "flag",
          refund_rate_threshold_bps: null,
        },
      },
    });
  });
});

describe("PATCH /api/v1/program", () => {
  it("changes the given fields only and answers the result", async () => {
    const { call, fake, product } = createGateway();
    const response = await call("PATCH", "/api/v1/program", {
      body: { commission_rate_bps: 10_000, hold_days: 0, payout_minimum_cents: 123_456, auto_approve: false },
    });
    expect(response.statusCode).toBe(200);
    expect(expectBody(programResponseSchema, response.json()).data).toMatchObject({
      commission_rate_bps: 10_000,
      tier2_rate_bps: 500,
      hold_days: 0,
      payout_minimum_cents: 123_456,
      attribution_window_days: 60,
      auto_approve: false,
    });
    expect(fake.requestsOf("updateProgram")).toMatchObject([
      {
        productId: product.productId,
        commissionRateBps: 10_000,
        holdDays: 0,
        payoutMinimumCents: 123_456n,
        autoApprove: false,
      },
    ]);
    const [sent] = fake.requestsOf("updateProgram") as { tier2RateBps?: number; attributionWindowDays?: number }[];
    expect(sent?.tier2RateBps).toBeUndefined();
    expect(sent?.attributionWindowDays).toBeUndefined();
  });

  it("answers the current settings for an empty body without writing", async () => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", { body: {} });
    expect(response.statusCode).toBe(200);
    expect(expectBody(programResponseSchema, response.json()).data.commission_rate_bps).toBe(2000);
    expect(fake.callsOf("updateProgram")).toBe(0);
  });

  it.each([
    ["commission_rate_bps above 10000", { commission_rate_bps: 10_001 }, "commission_rate_bps"],
    ["tier2_rate_bps below 0", { tier2_rate_bps: -1 }, "tier2_rate_bps"],
    ["hold_days below 0", { hold_days: -1 }, "hold_days"],
    ["hold_days above 365", { hold_days: 366 }, "hold_days"],
    ["attribution_window_days of 0", { attribution_window_days: 0 }, "attribution_window_days"],
    ["a fractional payout minimum", { payout_minimum_cents: 1.5 }, "payout_minimum_cents"],
    ["a negative payout minimum", { payout_minimum_cents: -1 }, "payout_minimum_cents"],
    ["auto_approve as a string", { auto_approve: "true" }, "auto_approve"],
    ["a rate as a string", { commission_rate_bps: "2000" }, "commission_rate_bps"],
  ])("answers 400 fieldErrors for %s", async (_case, body, field) => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", { body });
    expect(response.statusCode).toBe(400);
    const envelope = expectBody(validationErrorSchema, response.json());
    expect(Object.keys(envelope.details.fieldErrors)).toEqual([field]);
    expect(fake.callsOf("updateProgram")).toBe(0);
  });

  it.each([
    ["currency (read-only)", { currency: "eur" }, "currency"],
    ["product_id (read-only)", { product_id: "prd_x", hold_days: 3 }, "product_id"],
  ])("answers 400 formErrors for %s", async (_case, body, field) => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", { body });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
      formErrors: [`Unknown or read-only fields: ${field}`],
      fieldErrors: {},
    });
    expect(fake.callsOf("updateProgram")).toBe(0);
  });

  it("answers 400 naming an unknown field and the writable one it resembles", async () => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", { body: { commission_rate: 10 } });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details).toEqual({
      formErrors: ["Unknown field commission_rate; did you mean commission_rate_bps?"],
      fieldErrors: {},
    });
    expect(fake.callsOf("updateProgram")).toBe(0);
  });
});

describe("the fraud settings (contract section 18)", () => {
  it("sends only the settings given, and null clears the refund-rate threshold", async () => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", {
      body: { fraud: { self_referral: "reject", refund_rate_threshold_bps: 2500 } },
    });
    expect(response.statusCode).toBe(200);
    expect(fake.requestsOf("updateProgram")).toMatchObject([
      {
        fraud: {
          selfReferral: FraudAction.REJECT,
          duplicateClick: FraudAction.UNSPECIFIED,
          refundRateThresholdBps: 2500,
        },
      },
    ]);
    await call("PATCH", "/api/v1/program", { body: { fraud: { refund_rate_threshold_bps: null } } });
    expect(fake.requestsOf("updateProgram")[1]).toMatchObject({ fraud: { refundRateThresholdBps: 0 } });
  });

  it.each([
    [
      "an unknown signal, named",
      { fraud: { self_referal: "flag" } },
      /Unknown field fraud\.self_referal; did you mean self_referral\?/,
    ],
    ["an unknown signal, named", { fraud: { velocity: "flag" } }, /Unknown field fraud\.velocity/],
    ["reject for a click signal", { fraud: { duplicate_click: "reject" } }, /fraud/],
    ["a threshold out of range", { fraud: { refund_rate_threshold_bps: 10_001 } }, /fraud/],
  ])("answers 400 for %s, without calling partners", async (_case, body, message) => {
    const { call, fake } = createGateway();
    const response = await call("PATCH", "/api/v1/program", { body });
    expect(response.statusCode).toBe(400);
    expect(JSON.stringify(expectBody(validationErrorSchema, response.json()).details)).toMatch(message);
    expect(fake.requestsOf("updateProgram")).toEqual([]);
  });
});
