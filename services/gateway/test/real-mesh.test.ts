/**
 * Contract section 11 against the real services: amounts at the limit read back exactly
 * everywhere, and a service called directly refuses bad text itself.
 */

import { badTextMessage } from "@affiliate/contract-rules";
import { fieldErrorsOf } from "@affiliate/platform";
import { EventType } from "@affiliate/proto/ledger";
import {
  partnershipDetailResponseSchema,
  partnershipListResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliates";
import { generatePayoutsResponseSchema } from "@affiliate/rest-shapes/schemas/payouts";
import { statsResponseSchema, timeseriesResponseSchema } from "@affiliate/rest-shapes/schemas/stats";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectBody } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  mesh = await startRealMesh();
});
afterAll(() => mesh?.close());

const maxPayment = 100_000_000_000;

describe("payments at the limit (100,000,000,000 cents)", () => {
  it("two of them: stats, time series, affiliate reads and payout generation answer 200, exactly", async () => {
    const { key } = await mesh.newProduct();
    const call = (method: "GET" | "POST" | "PATCH", url: string, body?: unknown) =>
      mesh.call(key, method, url, body === undefined ? {} : { body });
    expect((await call("PATCH", "/api/v1/program", { hold_days: 0 })).statusCode).toBe(200);
    const registered = await call("POST", "/api/v1/affiliates", { email: "max@example.com", referralCode: "MAXPAY" });
    expect(registered.statusCode).toBe(201);
    const partnershipId: string = registered.json().partnership.id;

    for (const externalId of ["ch_max_1", "ch_max_2"]) {
      const paid = await call("POST", "/events", {
        type: "payment",
        referral_code: "MAXPAY",
        amount_cents: maxPayment,
        external_id: externalId,
      });
      expect(paid.statusCode).toBe(201);
      expect(paid.json().data.commissions).toEqual([
        { id: expect.any(String), level: 1, amount_cents: 20_000_000_000, status: "approved" },
      ]);
    }

    const stats = await call("GET", "/api/v1/stats?period=7d");
    expect(stats.statusCode).toBe(200);
    expect(expectBody(statsResponseSchema, stats.json()).data).toMatchObject({
      conversions: 2,
      revenue_cents: 200_000_000_000,
      commissions_cents: 40_000_000_000,
    });

    const series = await call("GET", "/api/v1/stats/timeseries?period=7d");
    expect(series.statusCode).toBe(200);
    const today = expectBody(timeseriesResponseSchema, series.json()).data.at(-1);
    expect(today).toMatchObject({ conversions: 2, revenue_cents: 200_000_000_000, commissions_cents: 40_000_000_000 });

    const read = await call("GET", `/api/v1/affiliates/${partnershipId}`);
    expect(read.statusCode).toBe(200);
    expect(expectBody(partnershipDetailResponseSchema, read.json()).data).toMatchObject({
      stats: { conversions: 2, earned_cents: 40_000_000_000 },
      commissions: {
        pending_count: 0,
        approved_count: 2,
        pending_amount_cents: 0,
        approved_amount_cents: 40_000_000_000,
      },
    });
    const list = await call("GET", "/api/v1/affiliates");
    expect(list.statusCode).toBe(200);
    expect(expectBody(partnershipListResponseSchema, list.json()).data).toMatchObject([
      { id: partnershipId, stats: { earned_cents: 40_000_000_000 } },
    ]);

    const generated = await call("POST", "/api/v1/payouts/generate");
    expect(generated.statusCode).toBe(200);
    expect(expectBody(generatePayoutsResponseSchema, generated.json()).data).toMatchObject([
      { partnership_id: partnershipId, status: "pending", amount_cents: 40_000_000_000, commission_count: 2 },
    ]);
  });

  it("one cent more is a 400 naming amount_cents, and records nothing", async () => {
    const { key } = await mesh.newProduct();
    await mesh.call(key, "POST", "/api/v1/affiliates", { body: { email: "over@example.com", referralCode: "OVER" } });
    for (const amount of [maxPayment + 1, 9_007_199_254_740_991]) {
      const over = await mesh.call(key, "POST", "/events", {
        body: { type: "payment", referral_code: "OVER", amount_cents: amount, external_id: `ch_${amount}` },
      });
      expect(over.statusCode).toBe(400);
      expect(over.json()).toEqual({
        error: "Validation failed",
        details: {
          formErrors: [],
          fieldErrors: { amount_cents: ["Must be an integer from 1 to 100,000,000,000 cents"] },
        },
      });
    }
    const stats = await mesh.call(key, "GET", "/api/v1/stats?period=7d");
    expect(stats.json().data).toMatchObject({ conversions: 0, revenue_cents: 0 });
  });
});

describe("a service called directly, not through the gateway", () => {
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error("expected the call to fail");
      },
      (error: unknown) => ConnectError.from(error),
    );

  it("partners answers INVALID_ARGUMENT naming the field for U+0000, and registers nothing", async () => {
    const { productId } = await mesh.newProduct();
    const error = await refusal(
      mesh.partners.registerAffiliate({
        productId,
        registration: { email: "direct@example.com", name: "Di\u0000rect" },
        notify: false,
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(error)).toEqual({ fieldErrors: { "registration.name": [badTextMessage] }, formErrors: [] });
    expect((await mesh.partners.listPartnerships({ productId, pageSize: 10 })).partnerships).toEqual([]);
  });

  it("the ledger and payouts answer INVALID_ARGUMENT for U+0000 in ids, filters and free text", async () => {
    const { productId } = await mesh.newProduct();
    const calls: [string, Promise<unknown>][] = [
      ["external_id", mesh.ledger.track({ productId, type: EventType.SIGNUP, externalId: "ch\u0000" })],
      ["user_agent", mesh.ledger.track({ productId, type: EventType.CLICK, referralCode: "X", userAgent: "\u0000" })],
      ["commission_id", mesh.ledger.getCommission({ productId, commissionId: "com_\u0000" })],
      ["partnership_id", mesh.ledger.listCommissions({ productId, partnershipId: "\u0000", pageSize: 10 })],
      ["product_id", mesh.payouts.generatePayouts({ productId: `${productId}\u0000` })],
      ["reference", mesh.payouts.updatePayout({ productId, payoutId: "po_1", reference: "tr\u0000" })],
    ];
    for (const [field, call] of calls) {
      const error = await refusal(call);
      expect(error.code, field).toBe(Code.InvalidArgument);
      expect(fieldErrorsOf(error)?.fieldErrors, field).toEqual({ [field]: [badTextMessage] });
    }
  });
});
