import {
  CommissionSchema,
  CommissionStatus,
  EventType,
  FraudFlagSchema,
  GetTimeseriesResponseSchema,
  HoldReason,
  RefundResultSchema,
  TrackedEventSchema,
} from "@affiliate/proto/ledger";
import {
  BulkRegistrationResultSchema,
  PartnershipSchema,
  PartnershipStatus,
  ProgramSchema,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import { PayoutSchema, PayoutStatus } from "@affiliate/proto/payouts";
import {
  ContractViolation,
  payoutStatusName,
  payoutStatusValue,
  statusName,
  toAffiliateCommission,
  toBulkResult,
  toPublicCommission,
  toPublicPartnership,
  toPublicPayout,
  toPublicProgram,
  toPublicRefund,
  toPublicTimeseries,
  toPublicTrackedEvent,
  toRegistrationBody,
} from "@affiliate/rest-shapes/mappers";
import { affiliateCommissionSchema } from "@affiliate/rest-shapes/schemas/affiliate-api";
import { partnershipSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { commissionSchema } from "@affiliate/rest-shapes/schemas/commissions";
import { payoutSchema, payoutStatusSchema } from "@affiliate/rest-shapes/schemas/payouts";
import { programSchema } from "@affiliate/rest-shapes/schemas/program";
import { refundResultSchema } from "@affiliate/rest-shapes/schemas/refunds";
import { trackedEventSchema } from "@affiliate/rest-shapes/schemas/tracking";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { gatewayConfigShape, loadGatewayConfig } from "../src/config.js";
import { expectBody } from "./support/harness.js";

const partnership = create(PartnershipSchema, {
  id: "ptn_1",
  productId: "prd_1",
  status: PartnershipStatus.REJECTED,
  referralCode: "CODE1",
  createdAt: { seconds: 1_735_787_045n, nanos: 678_000_000 },
  affiliate: { id: "aff_1", email: "a@example.com", name: "A" },
});

describe("mappers", () => {
  it("writes a partnership in the spec's snake_case with a millisecond ISO timestamp", () => {
    const mapped = toPublicPartnership(partnership, { clicks: 3, conversions: 2, earned_cents: 150n });
    expect(expectBody(partnershipSchema, mapped)).toEqual({
      id: "ptn_1",
      status: "rejected",
      referral_code: "CODE1",
      created_at: "2025-01-02T03:04:05.678Z",
      affiliate: { id: "aff_1", email: "a@example.com", name: "A" },
      external_id: null,
      commission_override: null,
      stats: { clicks: 3, conversions: 2, earned_cents: 150n },
    });
  });

  it("refuses values partners should never send", () => {
    expect(() => statusName(PartnershipStatus.UNSPECIFIED)).toThrow(ContractViolation);
    const stats = { clicks: 0, conversions: 0, earned_cents: 0n };
    expect(() =>
      toPublicPartnership(create(PartnershipSchema, { ...partnership, createdAt: undefined }), stats),
    ).toThrow(ContractViolation);
    expect(() => toRegistrationBody({ outcome: RegistrationOutcome.CREATED } as never)).toThrow(ContractViolation);
    expect(() => toBulkResult(create(BulkRegistrationResultSchema, { email: "a@example.com" }))).toThrow(
      ContractViolation,
    );
  });

  it("reports isNew only for a created account", () => {
    const outcomes = [RegistrationOutcome.CREATED, RegistrationOutcome.JOINED, RegistrationOutcome.REACTIVATED];
    expect(outcomes.map((outcome) => toRegistrationBody({ outcome, partnership } as never).affiliate.isNew)).toEqual([
      true,
      false,
      false,
    ]);
  });

  it("writes the program with payout_minimum_cents as a JSON number", () => {
    const program = create(ProgramSchema, {
      productId: "prd_1",
      name: "Acme",
      commissionRateBps: 1500,
      tier2RateBps: 0,
      holdDays: 0,
      payoutMinimumCents: 9_007_199_254_740_991n,
      attributionWindowDays: 365,
      autoApprove: false,
      currency: "usd",
    });
    const mapped = expectBody(programSchema, toPublicProgram(program));
    expect(mapped.payout_minimum_cents).toBe(Number.MAX_SAFE_INTEGER);
  });
});

const commission = create(CommissionSchema, {
  id: "com_2",
  productId: "prd_1",
  partnershipId: "ptn_1",
  amountCents: 9_007_199_254_740_991n,
  status: CommissionStatus.REFUNDED,
  level: 2,
  parentCommissionId: "com_1",
  holdUntil: { seconds: 1_738_379_045n, nanos: 678_000_000 },
  createdAt: { seconds: 1_735_787_045n, nanos: 1_000_000 },
  referralCode: "CODE1",
  paymentAmountCents: 12_345n,
  payoutId: "",
  eventId: "evt_1",
  reason: "fraud",
});

describe("ledger mappers", () => {
  it("turns the ledger's time series columns into dated points, across month and year ends", () => {
    const columns = (values: number[]) => values.map(BigInt);
    const series = create(GetTimeseriesResponseSchema, {
      firstDate: "2024-02-28",
      clicks: columns([1, 2, 3]),
      signups: columns([4, 5, 6]),
      conversions: columns([7, 8, 9]),
      revenueCents: columns([10, 11, 12]),
      commissionsCents: columns([13, 14, 15]),
    });
    expect(toPublicTimeseries(series).map((point) => [point.date, point.clicks, point.commissions_cents])).toEqual([
      ["2024-02-28", 1, 13n],
      ["2024-02-29", 2, 14n],
      ["2024-03-01", 3, 15n],
    ]);
    const newYear = toPublicTimeseries({ ...series, firstDate: "2025-12-31" });
    expect(newYear.map((point) => point.date)).toEqual(["2025-12-31", "2026-01-01", "2026-01-02"]);
    expect(toPublicTimeseries(create(GetTimeseriesResponseSchema))).toEqual([]);
  });

  it("refuses time series columns of different lengths, or a first date that is not one", () => {
    const series = create(GetTimeseriesResponseSchema, {
      firstDate: "2024-02-28",
      clicks: [1n, 2n],
      signups: [1n, 2n],
      conversions: [1n],
      revenueCents: [1n, 2n],
      commissionsCents: [1n, 2n],
    });
    expect(() => toPublicTimeseries(series)).toThrow(ContractViolation);
    expect(() => toPublicTimeseries({ ...series, firstDate: "yesterday", conversions: [1n, 2n] })).toThrow(
      ContractViolation,
    );
  });

  it("writes a commission in spec 2.2's fields, with the affiliate from the partnership", () => {
    const mapped = expectBody(commissionSchema, toPublicCommission(commission, partnership));
    expect(mapped).toEqual({
      id: "com_2",
      amount_cents: Number.MAX_SAFE_INTEGER,
      status: "refunded",
      level: 2,
      parent_commission_id: "com_1",
      hold_until: "2025-02-01T03:04:05.678Z",
      created_at: "2025-01-02T03:04:05.001Z",
      affiliate: { id: "aff_1", email: "a@example.com", name: "A" },
      referral_code: "CODE1",
      customer_email: null,
      payment_amount_cents: 12_345,
      payout_id: null,
      hold_reason: null,
      flags: [],
      review: null,
      rule: null,
      attribution: null,
    });
    const linked = create(CommissionSchema, { ...commission, payoutId: "po_1", customerEmail: "c@example.com" });
    expect(toPublicCommission(linked, partnership)).toMatchObject({
      payout_id: "po_1",
      customer_email: "c@example.com",
    });
    const disputed = create(CommissionSchema, { ...commission, holdReason: HoldReason.DISPUTE });
    expect(expectBody(commissionSchema, toPublicCommission(disputed, partnership)).hold_reason).toBe("dispute");
  });

  it("shows a flagged commission's evidence to the merchant, and only 'review' to its affiliate", () => {
    const flagged = create(CommissionSchema, {
      ...commission,
      status: CommissionStatus.PENDING,
      holdReason: HoldReason.REVIEW,
      flags: [
        create(FraudFlagSchema, {
          signal: "self_referral",
          evidenceJson: '{"match":"email_domain","domain":"acme-corp.io"}',
        }),
      ],
    });
    expect(expectBody(commissionSchema, toPublicCommission(flagged, partnership))).toMatchObject({
      hold_reason: "review",
      flags: [{ signal: "self_referral", evidence: { match: "email_domain", domain: "acme-corp.io" } }],
      review: null,
    });
    const seen = expectBody(affiliateCommissionSchema, toAffiliateCommission(flagged));
    expect(seen.hold_reason).toBe("review");
    expect(JSON.stringify(seen)).not.toMatch(/self_referral|acme-corp|flags|evidence/);
    // A dispute's hold stays the merchant's business.
    expect(
      toAffiliateCommission(create(CommissionSchema, { ...flagged, holdReason: HoldReason.DISPUTE })).hold_reason,
    ).toBe(null);
    const unknown = create(CommissionSchema, {
      ...flagged,
      flags: [create(FraudFlagSchema, { signal: "vibes", evidenceJson: "{}" })],
    });
    expect(() => toPublicCommission(unknown, partnership)).toThrow(ContractViolation);
  });

  it("refuses a commission without its partnership, status or timestamps", () => {
    expect(() => toPublicCommission(commission, undefined)).toThrow(ContractViolation);
    const unspecified = create(CommissionSchema, { ...commission, status: CommissionStatus.UNSPECIFIED });
    expect(() => toPublicCommission(unspecified, partnership)).toThrow(ContractViolation);
    const timeless = create(CommissionSchema, { ...commission, holdUntil: undefined });
    expect(() => toPublicCommission(timeless, partnership)).toThrow(ContractViolation);
  });

  it("writes a sandbox event with null ids and an unattributed one with null partnership", () => {
    const event = create(TrackedEventSchema, {
      id: "evt_9",
      type: EventType.PAYMENT,
      partnershipId: "",
      visitorId: "",
      occurredAt: { seconds: 1_735_787_045n, nanos: 678_000_000 },
      testMode: true,
      commissions: [{ id: "", level: 1, amountCents: 2_000n, status: CommissionStatus.APPROVED }],
    });
    expect(expectBody(trackedEventSchema, toPublicTrackedEvent(event))).toEqual({
      id: "evt_9",
      type: "payment",
      partnership_id: null,
      visitor_id: null,
      occurred_at: "2025-01-02T03:04:05.678Z",
      test_mode: true,
      commissions: [{ id: null, level: 1, amount_cents: 2000, status: "approved" }],
      commission_skipped: null,
      flags: [],
    });
    expect(() => toPublicTrackedEvent(undefined)).toThrow(ContractViolation);
    expect(() => toPublicTrackedEvent(create(TrackedEventSchema, { ...event, type: EventType.UNSPECIFIED }))).toThrow(
      ContractViolation,
    );
  });
});

const payout = create(PayoutSchema, {
  id: "po_1",
  productId: "prd_1",
  partnershipId: "ptn_1",
  status: PayoutStatus.COMPLETED,
  amountCents: 9_007_199_254_740_991n,
  adjustmentCents: -250n,
  commissionCount: 7n,
  createdAt: { seconds: 1_735_787_045n, nanos: 678_000_000 },
  approvedAt: { seconds: 1_735_787_046n, nanos: 0 },
  paidAt: { seconds: 1_735_787_047n, nanos: 5_000_000 },
  gatewayTransferId: "tr_1",
  failureReason: "never shown",
});

describe("payout and refund mappers", () => {
  it("writes a payout in contract 8's fields, with the affiliate from the partnership", () => {
    expect(expectBody(payoutSchema, toPublicPayout(payout, partnership))).toEqual({
      id: "po_1",
      status: "completed",
      amount_cents: BigInt(Number.MAX_SAFE_INTEGER),
      adjustment_cents: -250n,
      partnership_id: "ptn_1",
      affiliate: { id: "aff_1", email: "a@example.com", name: "A" },
      commission_count: 7,
      created_at: "2025-01-02T03:04:05.678Z",
      approved_at: "2025-01-02T03:04:06.000Z",
      paid_at: "2025-01-02T03:04:07.005Z",
      gateway_transfer_id: "tr_1",
    });
    const fresh = create(PayoutSchema, { ...payout, approvedAt: undefined, paidAt: undefined, gatewayTransferId: "" });
    expect(toPublicPayout(fresh, partnership)).toMatchObject({
      approved_at: null,
      paid_at: null,
      gateway_transfer_id: null,
    });
    expect(toPublicPayout(payout, partnership, { deleted: true }).status).toBe("rejected");
  });

  it("names every payout status both ways", () => {
    for (const name of payoutStatusSchema.options) expect(payoutStatusName(payoutStatusValue(name))).toBe(name);
  });

  it("refuses a payout without its partnership, status or creation time", () => {
    expect(() => toPublicPayout(payout, undefined)).toThrow(ContractViolation);
    const unspecified = create(PayoutSchema, { ...payout, status: PayoutStatus.UNSPECIFIED });
    expect(() => toPublicPayout(unspecified, partnership)).toThrow(ContractViolation);
    const timeless = create(PayoutSchema, { ...payout, createdAt: undefined });
    expect(() => toPublicPayout(timeless, partnership)).toThrow(ContractViolation);
  });

  it("writes a refund result in spec 4.9's fields and refuses a missing one", () => {
    const result = create(RefundResultSchema, {
      commissionId: "com_1",
      partnershipId: "ptn_1",
      paymentAmountCents: 10_000n,
      refundAmountCents: 2_500n,
      previousCommissionCents: 2_000n,
      newCommissionCents: 1_500n,
      status: CommissionStatus.PAID,
      fullyRefunded: false,
    });
    expect(expectBody(refundResultSchema, toPublicRefund(result))).toEqual({
      commission_id: "com_1",
      partnership_id: "ptn_1",
      payment_amount_cents: 10_000,
      refund_amount_cents: 2_500,
      previous_commission_cents: 2_000,
      new_commission_cents: 1_500,
      status: "paid",
      fully_refunded: false,
    });
    expect(() => toPublicRefund(undefined)).toThrow(ContractViolation);
    expect(() =>
      toPublicRefund(create(RefundResultSchema, { ...result, status: CommissionStatus.UNSPECIFIED })),
    ).toThrow(ContractViolation);
  });
});

describe("configuration", () => {
  it("has the contract's defaults", () => {
    expect(loadGatewayConfig({})).toMatchObject({
      PORT: 8080,
      HOST: "127.0.0.1",
      PARTNERS_URL: "http://127.0.0.1:7101",
      LEDGER_URL: "http://127.0.0.1:7102",
      PAYOUTS_URL: "http://127.0.0.1:7103",
      NATS_URL: "nats://127.0.0.1:4222",
      EVENTS_NAMESPACE: "",
      RATE_LIMIT_PER_MINUTE: 6000,
      TRACKING_RATE_LIMIT_PER_MINUTE: 60_000,
      KEY_CACHE_TTL_MS: 60_000,
    });
  });

  it("reads the ledger's address from LEDGER_URL and refuses one that is not a URL", () => {
    expect(loadGatewayConfig({ LEDGER_URL: "http://ledger.internal:9000" }).LEDGER_URL).toBe(
      "http://ledger.internal:9000",
    );
    const parsed = z.object(gatewayConfigShape).safeParse({ LEDGER_URL: "not a url" });
    expect(parsed.error?.issues.map((issue) => issue.path)).toEqual([["LEDGER_URL"]]);
  });

  it("reads payouts' address from PAYOUTS_URL and refuses one that is not a URL", () => {
    expect(loadGatewayConfig({ PAYOUTS_URL: "http://payouts.internal:9100" }).PAYOUTS_URL).toBe(
      "http://payouts.internal:9100",
    );
    const parsed = z.object(gatewayConfigShape).safeParse({ PAYOUTS_URL: "payouts" });
    expect(parsed.error?.issues.map((issue) => issue.path)).toEqual([["PAYOUTS_URL"]]);
  });

  it("reads TRUST_PROXY as addresses and ranges, and refuses anything else naming it", () => {
    expect(loadGatewayConfig({}).TRUST_PROXY).toEqual([]);
    expect(loadGatewayConfig({ TRUST_PROXY: " 10.0.0.0/8, 192.0.2.7 ,fd00::/8,uniquelocal" }).TRUST_PROXY).toEqual([
      "10.0.0.0/8",
      "192.0.2.7",
      "fd00::/8",
      "uniquelocal",
    ]);
    for (const bad of ["true", "*", "10.0.0.0/33", "10.0.0/8", "2", "10.0.0.1/8/1"]) {
      const parsed = z.object(gatewayConfigShape).safeParse({ TRUST_PROXY: bad });
      expect(
        parsed.error?.issues.map((issue) => issue.path),
        bad,
      ).toEqual([["TRUST_PROXY"]]);
    }
  });

  it("reads numbers from the environment", () => {
    const config = loadGatewayConfig({ PORT: "9090", RATE_LIMIT_PER_MINUTE: "5", KEY_CACHE_TTL_MS: "0" });
    expect([config.PORT, config.RATE_LIMIT_PER_MINUTE, config.KEY_CACHE_TTL_MS]).toEqual([9090, 5, 0]);
    expect(Object.isFrozen(config)).toBe(true);
  });
});
