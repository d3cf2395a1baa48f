import { Period } from "@affiliate/proto/ledger";
import { PartnershipStatus } from "@affiliate/proto/partners";
import { nestedErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { statsResponseSchema, timeseriesResponseSchema } from "@affiliate/rest-shapes/schemas/stats";
import { describe, expect, it } from "vitest";
import { metrics } from "./support/fake-ledger.js";
import { createGateway, expectBody } from "./support/harness.js";

const invalidPeriod = { data: { error: "Invalid period: must be 7d, 30d, 90d or 12m" } };

describe("GET /api/v1/stats", () => {
  it("answers the ledger's sums for 30d by default, with active affiliates counted by partners", async () => {
    const { call, fake, ledger, product } = createGateway();
    for (const status of [
      PartnershipStatus.ACTIVE,
      PartnershipStatus.ACTIVE,
      PartnershipStatus.PENDING,
      PartnershipStatus.REMOVED,
    ]) {
      fake.seed(product.productId, `${fake.partnerships.size}@example.com`, status);
    }
    fake.seed(fake.addProduct("Other").productId, "elsewhere@example.com");
    ledger.stats = { current: metrics(40), previous: metrics(7), conversionRate: 0.05 };

    const response = await call("GET", "/api/v1/stats");
    expect(response.statusCode).toBe(200);
    expect(expectBody(statsResponseSchema, response.json())).toEqual({
      data: {
        period: "30d",
        clicks: 40,
        signups: 41,
        conversions: 42,
        revenue_cents: 40_003,
        commissions_cents: 4004,
        conversion_rate: 0.05,
        active_affiliates: 2,
        previous_period: { clicks: 7, signups: 8, conversions: 9, revenue_cents: 7003, commissions_cents: 704 },
      },
    });
    expect(ledger.requestsOf("getStats")).toMatchObject([{ productId: product.productId, period: Period.PERIOD_30D }]);
    expect(fake.requestsOf("countPartnerships")).toMatchObject([
      { productId: product.productId, status: PartnershipStatus.ACTIVE },
    ]);
    expect(fake.callsOf("listPartnerships")).toBe(0);
  });

  it.each([
    ["7d", Period.PERIOD_7D],
    ["30d", Period.PERIOD_30D],
    ["90d", Period.PERIOD_90D],
    ["12m", Period.PERIOD_12M],
  ])("asks the ledger for period %s and echoes it", async (period, value) => {
    const { call, ledger } = createGateway();
    const response = await call("GET", `/api/v1/stats?period=${period}`);
    expect(response.statusCode).toBe(200);
    expect(expectBody(statsResponseSchema, response.json()).data.period).toBe(period);
    expect(ledger.requestsOf("getStats")).toMatchObject([{ period: value }]);
  });

  it.each(["1y", "7D", "", "30", "period=7d"])(
    "answers 400 with the nested body for period=%s, without calling a service",
    async (period) => {
      const { call, fake, ledger } = createGateway();
      const response = await call("GET", `/api/v1/stats?period=${encodeURIComponent(period)}`);
      expect(response.statusCode).toBe(400);
      expect(expectBody(nestedErrorSchema, response.json())).toEqual(invalidPeriod);
      expect(ledger.callsOf("getStats")).toBe(0);
      expect(fake.callsOf("countPartnerships")).toBe(0);
    },
  );

  it("answers 400 with the nested body for a repeated period", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/stats?period=7d&period=30d");
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual(invalidPeriod);
  });
});

describe("GET /api/v1/stats/timeseries", () => {
  it("answers one point per day from the ledger, 30 by default", async () => {
    const { call, ledger, product } = createGateway();
    const response = await call("GET", "/api/v1/stats/timeseries");
    expect(response.statusCode).toBe(200);
    const body = expectBody(timeseriesResponseSchema, response.json());
    expect(body.data).toHaveLength(30);
    expect(body.data.at(-1)).toEqual({
      date: "2025-03-04",
      clicks: 29,
      signups: 30,
      conversions: 31,
      revenue_cents: 29_003,
      commissions_cents: 2904,
    });
    expect(body.data[0]?.date).toBe("2025-02-03");
    expect(ledger.requestsOf("getTimeseries")).toMatchObject([
      { productId: product.productId, period: Period.PERIOD_30D },
    ]);
  });

  it("answers 7 points for 7d, oldest first", async () => {
    const { call, ledger } = createGateway();
    const body = expectBody(timeseriesResponseSchema, (await call("GET", "/api/v1/stats/timeseries?period=7d")).json());
    expect(body.data.map((point) => point.date)).toEqual([
      "2025-02-26",
      "2025-02-27",
      "2025-02-28",
      "2025-03-01",
      "2025-03-02",
      "2025-03-03",
      "2025-03-04",
    ]);
    expect(body.data[0]).toEqual({
      date: "2025-02-26",
      clicks: 0,
      signups: 1,
      conversions: 2,
      revenue_cents: 3,
      commissions_cents: 4,
    });
    expect(ledger.requestsOf("getTimeseries")).toMatchObject([{ period: Period.PERIOD_7D }]);
  });

  it("answers 400 with the nested body for an invalid period, without calling the ledger", async () => {
    const { call, ledger } = createGateway();
    const response = await call("GET", "/api/v1/stats/timeseries?period=1w");
    expect(response.statusCode).toBe(400);
    expect(expectBody(nestedErrorSchema, response.json())).toEqual(invalidPeriod);
    expect(ledger.callsOf("getTimeseries")).toBe(0);
  });

  it("answers 403 for a test-mode key", async () => {
    const { call, ledger, product } = createGateway();
    const response = await call("GET", "/api/v1/stats/timeseries", { key: product.testKey });
    expect(response.statusCode).toBe(403);
    expect(ledger.callsOf("getTimeseries")).toBe(0);
  });
});
