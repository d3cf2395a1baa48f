import { partnersEvents } from "@affiliate/proto/events";
import {
  CommissionType,
  PartnershipSchema,
  PartnershipStatus,
  type PartnersService,
  type ResolveAttributionResponse,
  ResolveAttributionResponseSchema,
} from "@affiliate/proto/partners";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { evictOnPartnersEvent } from "../src/events/partners-follower.js";
import { CachedPartnersDirectory } from "../src/rpc/partners-directory.js";

/** Partners answering ResolveAttribution with whatever `answer` holds now, counting the calls. */
function fakePartners(answer: { current: ResolveAttributionResponse }) {
  const calls = { count: 0 };
  const client = {
    resolveAttribution: async () => {
      calls.count++;
      return answer.current;
    },
  } as unknown as Client<typeof PartnersService>;
  return { client, calls };
}

const resolved = (override?: { commissionRateBps?: number; maxCommissionMonths?: number }) =>
  create(ResolveAttributionResponseSchema, {
    partnershipId: "ptn_1",
    referralCode: "ADA",
    status: PartnershipStatus.ACTIVE,
    program: {
      productId: "prd_1",
      commissionType: CommissionType.PERCENT,
      commissionRateBps: 2000,
      tier2RateBps: 500,
      maxCommissionMonths: 12,
      maxCommissionPayments: 0,
      holdDays: 30,
      attributionWindowDays: 60,
    },
    commissionOverride: override,
  });

describe("the ledger's view of partners", () => {
  it("reads the program's rules and the override field by field, a 0 limit as none", async () => {
    const answer = { current: resolved({ commissionRateBps: 4000, maxCommissionMonths: 0 }) };
    const directory = new CachedPartnersDirectory(fakePartners(answer).client, { ttlMs: 60_000, maxEntries: 10 });
    const attribution = await directory.byPartnershipId("prd_1", "ptn_1");
    expect(attribution?.program).toMatchObject({
      commissionType: "percent",
      maxCommissionMonths: 12,
      maxCommissionPayments: null,
    });
    expect(attribution?.commissionOverride).toEqual({ commissionRateBps: 4000, maxCommissionMonths: null });
  });

  it("drops a cached partnership when its commission override changes", async () => {
    const answer = { current: resolved() };
    const { client, calls } = fakePartners(answer);
    const directory = new CachedPartnersDirectory(client, { ttlMs: 60_000, maxEntries: 10 });
    directory.setFollowing(true);
    await directory.byPartnershipId("prd_1", "ptn_1");
    expect((await directory.byPartnershipId("prd_1", "ptn_1"))?.commissionOverride).toBeNull();
    expect(calls.count).toBe(1); // cached

    answer.current = resolved({ commissionRateBps: 4000 });
    const event = partnersEvents.partnershipCommissionOverrideChanged;
    evictOnPartnersEvent(directory)({
      subject: event.subject,
      data: toBinary(
        event.schema,
        create(event.schema, {
          id: "msg_1",
          partnership: create(PartnershipSchema, { id: "ptn_1", productId: "prd_1" }),
        }),
      ),
    });
    expect((await directory.byPartnershipId("prd_1", "ptn_1"))?.commissionOverride).toEqual({
      commissionRateBps: 4000,
    });
    expect(calls.count).toBe(2);
  });
});
