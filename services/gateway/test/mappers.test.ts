import {
  BulkRegistrationResultSchema,
  PartnershipSchema,
  PartnershipStatus,
  ProgramSchema,
  RegistrationOutcome,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../src/config.js";
import {
  ContractViolation,
  statusName,
  toBulkResult,
  toPublicPartnership,
  toPublicProgram,
  toRegistrationBody,
} from "../src/mappers.js";
import { partnershipSchema } from "../src/schemas/affiliates.js";
import { programSchema } from "../src/schemas/program.js";
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
    const mapped = toPublicPartnership(partnership, { clicks: 3, conversions: 2, earned_cents: 150 });
    expect(expectBody(partnershipSchema, mapped)).toEqual({
      id: "ptn_1",
      status: "rejected",
      referral_code: "CODE1",
      created_at: "2025-01-02T03:04:05.678Z",
      affiliate: { id: "aff_1", email: "a@example.com", name: "A" },
      stats: { clicks: 3, conversions: 2, earned_cents: 150 },
    });
  });

  it("refuses values partners should never send", () => {
    expect(() => statusName(PartnershipStatus.UNSPECIFIED)).toThrow(ContractViolation);
    expect(() => toPublicPartnership(create(PartnershipSchema, { ...partnership, createdAt: undefined }))).toThrow(
      ContractViolation,
    );
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

describe("configuration", () => {
  it("has the contract's defaults", () => {
    expect(loadGatewayConfig({})).toMatchObject({
      PORT: 8080,
      HOST: "127.0.0.1",
      PARTNERS_URL: "http://127.0.0.1:7101",
      NATS_URL: "nats://127.0.0.1:4222",
      EVENTS_NAMESPACE: "",
      RATE_LIMIT_PER_MINUTE: 6000,
      TRACKING_RATE_LIMIT_PER_MINUTE: 60_000,
      KEY_CACHE_TTL_MS: 60_000,
    });
  });

  it("reads numbers from the environment", () => {
    const config = loadGatewayConfig({ PORT: "9090", RATE_LIMIT_PER_MINUTE: "5", KEY_CACHE_TTL_MS: "0" });
    expect([config.PORT, config.RATE_LIMIT_PER_MINUTE, config.KEY_CACHE_TTL_MS]).toEqual([9090, 5, 0]);
    expect(Object.isFrozen(config)).toBe(true);
  });
});
