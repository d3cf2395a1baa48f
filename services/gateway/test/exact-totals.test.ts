/**
 * Contract section 11, "Every total the API reports is exact": sums of cents are written as JSON
 * integers digit for digit, past 2^53 − 1 too (docs/api.md, "Totals").
 */
import { stringifyExact } from "@affiliate/platform";
import { MetricsSchema } from "@affiliate/proto/ledger";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createGateway } from "./support/harness.js";

const maxInt64 = 9_223_372_036_854_775_807n;
const beyondDouble = 9_007_199_254_740_993n; // 2^53 + 1

describe("stringifyExact", () => {
  it("writes bigints digit for digit and everything else as JSON.stringify does", () => {
    expect(stringifyExact({ a: maxInt64, b: -beyondDouble, c: [1n] })).toBe(
      '{"a":9223372036854775807,"b":-9007199254740993,"c":[1]}',
    );
    const plain = {
      s: "x\u0000\uD800\u{1F600}",
      n: 1.5,
      z: -0,
      nan: Number.NaN,
      u: undefined,
      d: new Date(0),
      l: [undefined],
    };
    expect(stringifyExact(plain)).toBe(JSON.stringify(plain));
  });

  it("refuses a circular value instead of writing a placeholder", () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => stringifyExact(loop)).toThrow(TypeError);
  });
});

describe("sums past 2^53 over HTTP", () => {
  it("stats and the time series write them exactly", async () => {
    const gateway = createGateway();
    const huge = create(MetricsSchema, { clicks: 3n, revenueCents: maxInt64, commissionsCents: beyondDouble });
    gateway.ledger.stats = { current: huge, previous: huge, conversionRate: 0 };
    const stats = await gateway.call("GET", "/api/v1/stats?period=7d");
    expect(stats.statusCode).toBe(200);
    expect(stats.body).toContain('"revenue_cents":9223372036854775807,"commissions_cents":9007199254740993');
    expect(stats.body).toContain(
      '"previous_period":{"clicks":3,"signups":0,"conversions":0,"revenue_cents":9223372036854775807,"commissions_cents":9007199254740993}',
    );
  });

  it("a payout's amount and a partnership's earnings are written exactly", async () => {
    const gateway = createGateway();
    const partnership = gateway.fake.seed(gateway.product.productId, "big@example.com");
    const payout = gateway.payouts.seedPayout(partnership, { amountCents: maxInt64, adjustmentCents: -beyondDouble });
    const read = await gateway.call("GET", `/api/v1/payouts/${payout.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.body).toContain('"amount_cents":9223372036854775807,"adjustment_cents":-9007199254740993');
  });
});
