import { describe, expect, it } from "vitest";
import { amountAfterRefunds, commissionAmount, mulDivRoundHalfUp } from "../src/domain/money.js";
import { trackErrors } from "../src/domain/tracking-rules.js";

describe("commission arithmetic", () => {
  it("rounds to the nearest cent, halves up", () => {
    expect(commissionAmount(1234, 2000)).toBe(247); // 246.8
    expect(commissionAmount(1234, 500)).toBe(62); // 61.7
    expect(commissionAmount(1, 2000)).toBe(0); // 0.2
    expect(commissionAmount(5, 1000)).toBe(1); // 0.5 rounds up
    expect(commissionAmount(15, 1000)).toBe(2); // 1.5 rounds up
    expect(commissionAmount(25, 1000)).toBe(3); // 2.5 rounds up, not to even
    expect(commissionAmount(14, 1000)).toBe(1); // 1.4
    expect(commissionAmount(10_000, 0)).toBe(0);
    expect(commissionAmount(10_000, 10_000)).toBe(10_000);
  });

  it("stays exact for payments whose product with the rate exceeds 2^53", () => {
    expect(commissionAmount(9_007_199_254_740_991, 2000)).toBe(1_801_439_850_948_198);
  });

  it("recomputes from the cumulative refunded total", () => {
    expect(amountAfterRefunds(247, 1234, 0)).toBe(247);
    expect(amountAfterRefunds(247, 1234, 1234)).toBe(0);
    expect(amountAfterRefunds(2000, 10_000, 3333)).toBe(1333); // 1333.4
    expect(amountAfterRefunds(2000, 10_000, 3333 + 3333)).toBe(667); // 666.8, not 1333 - 667
    expect(() => amountAfterRefunds(2000, 10_000, 10_001)).toThrow(RangeError);
  });

  it("refuses negative or non-integer operands", () => {
    expect(() => mulDivRoundHalfUp(-1, 2, 3)).toThrow(RangeError);
    expect(() => mulDivRoundHalfUp(1.5, 2, 3)).toThrow(RangeError);
    expect(() => mulDivRoundHalfUp(1, 2, 0)).toThrow(RangeError);
  });
});

describe("tracking rules", () => {
  const now = new Date("2026-06-01T12:00:00.000Z");
  const base = { productId: "prd_x", testMode: false } as const;

  it("accepts well-formed events of each type", () => {
    expect(trackErrors({ ...base, type: "click", referralCode: "CODE1" }, now)).toEqual({});
    expect(trackErrors({ ...base, type: "signup", customerEmail: " A@B.co ", visitorId: "v1" }, now)).toEqual({});
    expect(trackErrors({ ...base, type: "payment", amountCents: 1, externalId: "ch_1" }, now)).toEqual({});
  });

  it("requires a referral code on clicks and refuses customer and payment fields there", () => {
    expect(trackErrors({ ...base, type: "click" }, now)).toEqual({ referral_code: ["Required for a click"] });
    expect(
      Object.keys(
        trackErrors({ ...base, type: "click", referralCode: "abc", amountCents: 5, customerEmail: "a@b.co" }, now),
      ).sort(),
    ).toEqual(["amount_cents", "customer_email"]);
  });

  it("requires a positive integer amount on payments, and none on signups", () => {
    expect(trackErrors({ ...base, type: "payment" }, now)).toHaveProperty("amount_cents");
    for (const amountCents of [0, -5, 1.5]) {
      expect(trackErrors({ ...base, type: "payment", amountCents }, now)).toHaveProperty("amount_cents");
    }
    expect(trackErrors({ ...base, type: "signup", amountCents: 100 }, now)).toHaveProperty("amount_cents");
    expect(trackErrors({ ...base, type: "signup", externalId: "x" }, now)).toHaveProperty("external_id");
  });

  it("bounds occurred_at to 5 minutes ahead and 400 days back", () => {
    const at = (ms: number) => trackErrors({ ...base, type: "signup", occurredAt: new Date(now.getTime() + ms) }, now);
    expect(at(5 * 60 * 1000)).toEqual({});
    expect(at(5 * 60 * 1000 + 1)).toHaveProperty("occurred_at");
    expect(at(-400 * 24 * 3600 * 1000)).toEqual({});
    expect(at(-400 * 24 * 3600 * 1000 - 1)).toHaveProperty("occurred_at");
  });

  it("checks lengths and formats of the optional fields", () => {
    expect(trackErrors({ ...base, type: "signup", visitorId: "v".repeat(129) }, now)).toHaveProperty("visitor_id");
    expect(trackErrors({ ...base, type: "signup", visitorId: "" }, now)).toHaveProperty("visitor_id");
    expect(trackErrors({ ...base, type: "signup", customerEmail: "nope" }, now)).toHaveProperty("customer_email");
    expect(trackErrors({ ...base, type: "signup", referralCode: "a!" }, now)).toHaveProperty("referral_code");
  });
});
