import { LedgerService } from "@affiliate/proto/ledger";
import { PartnershipStatus } from "@affiliate/proto/partners";
import {
  bulkRegisterResponseSchema,
  partnershipDetailResponseSchema,
  partnershipListResponseSchema,
  partnershipResponseSchema,
  registerAffiliateResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliates";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { PartnershipStats, PartnershipStatsSource } from "../src/stats-source.js";
import { createGateway, expectBody } from "./support/harness.js";

describe("POST /api/v1/affiliates", () => {
  it("answers 201 with the unwrapped registration body for a new account", async () => {
    const { call, fake, product } = createGateway();
    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "  Jane@Example.com ", name: "Jane", referralCode: "jane_1" },
    });
    expect(response.statusCode).toBe(201);
    const body = expectBody(registerAffiliateResponseSchema, response.json());
    const [stored] = fake.partnerships.values();
    expect(body).toEqual({
      affiliate: { id: stored?.affiliate?.id, email: "jane@example.com", name: "Jane", isNew: true },
      partnership: { id: stored?.id, status: "active", referralCode: "jane_1" },
    });
    expect(fake.requestsOf("registerAffiliate")).toMatchObject([
      {
        productId: product.productId,
        notify: true,
        registration: { email: "jane@example.com", name: "Jane", referralCode: "jane_1" },
      },
    ]);
  });

  it("answers 201 with isNew false when an existing user joins, and passes notify and the sponsor", async () => {
    const { call, fake } = createGateway();
    const other = fake.addProduct("Other");
    await call("POST", "/api/v1/affiliates", { key: other.liveKey, body: { email: "sam@example.com" } });
    const sponsor = await call("POST", "/api/v1/affiliates", {
      body: { email: "boss@example.com", referralCode: "boss" },
    });
    expect(sponsor.statusCode).toBe(201);

    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "sam@example.com", notify: false, sponsorReferralCode: "boss" },
    });
    expect(response.statusCode).toBe(201);
    expect(expectBody(registerAffiliateResponseSchema, response.json()).affiliate.isNew).toBe(false);
    expect(fake.requestsOf("registerAffiliate").at(-1)).toMatchObject({
      notify: false,
      registration: { sponsorReferralCode: "boss" },
    });
  });

  it("answers 200 when a removed affiliate is reactivated", async () => {
    const { call, fake, product } = createGateway();
    const removed = fake.seed(product.productId, "back@example.com", PartnershipStatus.REMOVED);
    const response = await call("POST", "/api/v1/affiliates", { body: { email: "back@example.com" } });
    expect(response.statusCode).toBe(200);
    const body = expectBody(registerAffiliateResponseSchema, response.json());
    expect(body.partnership).toEqual({ id: removed.id, status: "active", referralCode: removed.referralCode });
    expect(body.affiliate.isNew).toBe(false);
  });

  it("answers 409 with partners' message when the affiliate is already in the program", async () => {
    const { call } = createGateway();
    await call("POST", "/api/v1/affiliates", { body: { email: "dup@example.com" } });
    const response = await call("POST", "/api/v1/affiliates", { body: { email: "dup@example.com" } });
    expect(response.statusCode).toBe(409);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Affiliate is already in the program" });
  });

  it("answers 400 with the validation envelope for invalid fields, without calling partners", async () => {
    const { call, fake } = createGateway();
    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "not-an-email", name: "", referralCode: "a b", notify: "yes" },
    });
    expect(response.statusCode).toBe(400);
    const body = expectBody(validationErrorSchema, response.json());
    expect(body.details.formErrors).toEqual([]);
    expect(Object.keys(body.details.fieldErrors).sort()).toEqual(["email", "name", "notify", "referralCode"]);
    expect(body.details.fieldErrors.email).toEqual(["Invalid email address"]);
    expect(fake.callsOf("registerAffiliate")).toBe(0);
  });

  it("answers 400 with the envelope when there is no body at all", async () => {
    const { call } = createGateway();
    const response = await call("POST", "/api/v1/affiliates");
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json()).details.formErrors).toHaveLength(1);
  });

  it("turns partners' field violations into the validation envelope", async () => {
    const { call } = createGateway();
    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "new@example.com", sponsorReferralCode: "nobody" },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { sponsorReferralCode: ["No active affiliate has this referral code"] } },
    });
  });

  it("answers 400 { error } for an INVALID_ARGUMENT without field violations", async () => {
    const { call, fake } = createGateway();
    fake.failures.set("registerAffiliate", new ConnectError("Registration is closed", Code.InvalidArgument));
    const response = await call("POST", "/api/v1/affiliates", { body: { email: "new@example.com" } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: "Registration is closed" });
  });
});

describe("POST /api/v1/affiliates/bulk", () => {
  it("sends valid entries in one call, fails invalid ones in place, and sums up", async () => {
    const { call, fake, product } = createGateway();
    fake.seed(product.productId, "gone@example.com", PartnershipStatus.REMOVED);
    fake.seed(product.productId, "here@example.com");
    const other = fake.addProduct("Other");
    await call("POST", "/api/v1/affiliates", { key: other.liveKey, body: { email: "known@example.com" } });

    const response = await call("POST", "/api/v1/affiliates/bulk", {
      body: {
        notify: false,
        affiliates: [
          { email: "new@example.com", name: "New" },
          { email: "bad-email" },
          { email: "Known@Example.com" },
          "not an object",
          { email: "gone@example.com" },
          { email: "ok@example.com", referralCode: "x" },
          { email: "here@example.com" },
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    const body = expectBody(bulkRegisterResponseSchema, response.json());
    expect(body.results.map(({ email, success }) => ({ email, success }))).toEqual([
      { email: "new@example.com", success: true },
      { email: "bad-email", success: false },
      { email: "Known@Example.com", success: true },
      { email: "", success: false },
      { email: "gone@example.com", success: true },
      { email: "ok@example.com", success: false },
      { email: "here@example.com", success: false },
    ]);
    expect(body.results.map((result) => (result.success ? result.action : result.error))).toEqual([
      "created",
      "email: Invalid email address",
      "joined",
      "Invalid input: expected object, received string",
      "reactivated",
      "referralCode: Must be 3-50 letters, digits, hyphens or underscores",
      "Affiliate is already in the program",
    ]);
    expect(body.summary).toEqual({ total: 7, created: 1, joined: 1, reactivated: 1, failed: 4 });
    expect(body.summary.total).toBe(
      body.summary.created + body.summary.joined + body.summary.reactivated + body.summary.failed,
    );

    expect(fake.callsOf("bulkRegisterAffiliates")).toBe(1);
    const [sent] = fake.requestsOf("bulkRegisterAffiliates") as {
      productId: string;
      notify: boolean;
      registrations: { email: string }[];
    }[];
    expect(sent?.productId).toBe(product.productId);
    expect(sent?.notify).toBe(false);
    expect(sent?.registrations.map((entry) => entry.email)).toEqual([
      "new@example.com",
      "known@example.com",
      "gone@example.com",
      "here@example.com",
    ]);
    const created = body.results[0];
    expect(created?.success && fake.partnerships.get(created.partnershipId)?.affiliate?.email).toBe("new@example.com");
  });

  it("makes no call when every entry is invalid", async () => {
    const { call, fake } = createGateway();
    const response = await call("POST", "/api/v1/affiliates/bulk", {
      body: { affiliates: [{ email: "x" }, { name: "no email" }] },
    });
    expect(response.statusCode).toBe(200);
    expect(expectBody(bulkRegisterResponseSchema, response.json()).summary).toEqual({
      total: 2,
      created: 0,
      joined: 0,
      reactivated: 0,
      failed: 2,
    });
    expect(fake.callsOf("bulkRegisterAffiliates")).toBe(0);
  });

  it.each([
    ["no entries", { affiliates: [] }],
    ["101 entries", { affiliates: Array.from({ length: 101 }, (_, i) => ({ email: `a${i}@example.com` })) }],
    ["not an array", { affiliates: { email: "a@example.com" } }],
    ["no affiliates field", { notify: true }],
  ])("answers 400 with the envelope and registers nothing for %s", async (_case, body) => {
    const { call, fake } = createGateway();
    const response = await call("POST", "/api/v1/affiliates/bulk", { body });
    expect(response.statusCode).toBe(400);
    const envelope = expectBody(validationErrorSchema, response.json());
    expect(envelope.details.fieldErrors.affiliates).toHaveLength(1);
    expect(fake.callsOf("bulkRegisterAffiliates")).toBe(0);
  });

  it("accepts exactly 100 entries", async () => {
    const { call, fake } = createGateway();
    const affiliates = Array.from({ length: 100 }, (_, i) => ({ email: `a${i}@example.com` }));
    const response = await call("POST", "/api/v1/affiliates/bulk", { body: { affiliates } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(bulkRegisterResponseSchema, response.json()).summary.created).toBe(100);
    expect(fake.callsOf("bulkRegisterAffiliates")).toBe(1);
  });
});

/** A stats source that records its calls and answers fixed figures. */
function recordingStats(): PartnershipStatsSource & { calls: string[][]; breakdowns: string[] } {
  const calls: string[][] = [];
  const breakdowns: string[] = [];
  return {
    calls,
    breakdowns,
    async statsFor(_productId, ids) {
      calls.push([...ids]);
      return new Map<string, PartnershipStats>(
        ids.map((id, i) => [id, { clicks: 10 + i, conversions: i, earned_cents: BigInt(100 * i) }]),
      );
    },
    async breakdownFor(_productId, id) {
      breakdowns.push(id);
      return {
        stats: { clicks: 7, conversions: 3, earned_cents: 900n },
        breakdown: { pending_count: 1, approved_count: 2, pending_amount_cents: 300n, approved_amount_cents: 400n },
      };
    },
  };
}

describe("GET /api/v1/affiliates", () => {
  it("pages newest first, maps cursors, and asks for stats once per page", async () => {
    const stats = recordingStats();
    const { call, fake, product } = createGateway({ stats });
    const seeded = ["a", "b", "c"].map((name) => fake.seed(product.productId, `${name}@example.com`));
    fake.seed(fake.addProduct("Other").productId, "elsewhere@example.com");

    const first = await call("GET", "/api/v1/affiliates?limit=2");
    expect(first.statusCode).toBe(200);
    const page1 = expectBody(partnershipListResponseSchema, first.json());
    expect(page1.data.map((p) => p.affiliate.email)).toEqual(["c@example.com", "b@example.com"]);
    expect(page1.pagination.has_more).toBe(true);
    expect(page1.pagination.next_cursor).toEqual(expect.any(String));
    expect(page1.data[0]).toEqual({
      id: seeded[2]?.id,
      status: "active",
      referral_code: seeded[2]?.referralCode,
      created_at: "2025-01-02T03:04:08.678Z",
      affiliate: { id: seeded[2]?.affiliate?.id, email: "c@example.com", name: "" },
      external_id: null,
      commission_override: null,
      stats: { clicks: 10, conversions: 0, earned_cents: 0 },
    });
    expect(stats.calls).toEqual([[seeded[2]?.id, seeded[1]?.id]]);

    const second = await call("GET", `/api/v1/affiliates?limit=2&cursor=${page1.pagination.next_cursor}`);
    const page2 = expectBody(partnershipListResponseSchema, second.json());
    expect(page2.data.map((p) => p.affiliate.email)).toEqual(["a@example.com"]);
    expect(page2.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(fake.requestsOf("listPartnerships")).toMatchObject([
      { productId: product.productId, pageSize: 2, pageToken: "", status: PartnershipStatus.UNSPECIFIED },
      { productId: product.productId, pageSize: 2, pageToken: page1.pagination.next_cursor },
    ]);
  });

  it("defaults the page size to 50 and filters by status", async () => {
    const { call, fake, product } = createGateway();
    fake.seed(product.productId, "p@example.com", PartnershipStatus.PENDING);
    fake.seed(product.productId, "a@example.com");
    const response = await call("GET", "/api/v1/affiliates?status=pending");
    const body = expectBody(partnershipListResponseSchema, response.json());
    expect(body.data.map((p) => [p.affiliate.email, p.status])).toEqual([["p@example.com", "pending"]]);
    expect(fake.requestsOf("listPartnerships")).toMatchObject([{ pageSize: 50, status: PartnershipStatus.PENDING }]);
  });

  it.each(["0", "101", "abc", "1.5", ""])("answers 400 fieldErrors.limit for limit=%s", async (limit) => {
    const { call, fake } = createGateway();
    const response = await call("GET", `/api/v1/affiliates?limit=${limit}`);
    expect(response.statusCode).toBe(400);
    const body = expectBody(validationErrorSchema, response.json());
    expect(Object.keys(body.details.fieldErrors)).toEqual(["limit"]);
    expect(fake.callsOf("listPartnerships")).toBe(0);
  });

  it("answers 400 fieldErrors.status for an unknown status", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/affiliates?status=banned");
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual(["status"]);
  });

  it("answers 400 fieldErrors.cursor when partners rejects the cursor", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/affiliates?cursor=forged");
    expect(response.statusCode).toBe(400);
    expect(expectBody(validationErrorSchema, response.json())).toEqual({
      error: "Validation failed",
      details: { formErrors: [], fieldErrors: { cursor: ["The cursor was not issued by this API"] } },
    });
  });

  it("shows the ledger's figures per partnership, from one BatchGetPartnershipStats call per page", async () => {
    const { call, fake, ledger, product } = createGateway();
    const [quiet, busy, busier] = ["a", "b", "c"].map((name) => fake.seed(product.productId, `${name}@example.com`));
    ledger.setFigures(busy?.id ?? "", 20);
    ledger.setFigures(busier?.id ?? "", 30);

    const response = await call("GET", "/api/v1/affiliates");
    expect(response.statusCode).toBe(200);
    const body = expectBody(partnershipListResponseSchema, response.json());
    expect(body.data.map((p) => [p.id, p.stats])).toEqual([
      [busier?.id, { clicks: 30, conversions: 31, earned_cents: 3002 }],
      [busy?.id, { clicks: 20, conversions: 21, earned_cents: 2002 }],
      [quiet?.id, { clicks: 0, conversions: 0, earned_cents: 0 }],
    ]);
    expect(ledger.requestsOf("batchGetPartnershipStats")).toMatchObject([
      { productId: product.productId, partnershipIds: [busier?.id, busy?.id, quiet?.id] },
    ]);
  });

  it("answers 500, not zeros, when the ledger leaves a partnership out of its stats", async () => {
    const omitting = createRouterTransport(({ service }) =>
      service(LedgerService, { batchGetPartnershipStats: () => ({ stats: {} }) }),
    );
    const { call, fake, product } = createGateway({ ledgerTransport: omitting });
    fake.seed(product.productId, "a@example.com");
    const response = await call("GET", "/api/v1/affiliates");
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Internal server error" });
  });

  it("answers an empty page without asking for stats", async () => {
    const stats = recordingStats();
    const { call } = createGateway({ stats });
    const body = expectBody(partnershipListResponseSchema, (await call("GET", "/api/v1/affiliates")).json());
    expect(body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
    expect(stats.calls).toEqual([]);
  });
});

describe("GET /api/v1/affiliates/:id", () => {
  it("answers the partnership with stats and the commission breakdown", async () => {
    const stats = recordingStats();
    const { call, fake, product } = createGateway({ stats });
    const seeded = fake.seed(product.productId, "one@example.com");
    const response = await call("GET", `/api/v1/affiliates/${seeded.id}`);
    expect(response.statusCode).toBe(200);
    const body = expectBody(partnershipDetailResponseSchema, response.json());
    expect(body.data.stats).toEqual({ clicks: 7, conversions: 3, earned_cents: 900 });
    expect(body.data.commissions).toEqual({
      pending_count: 1,
      approved_count: 2,
      pending_amount_cents: 300,
      approved_amount_cents: 400,
    });
    expect(stats.breakdowns).toEqual([seeded.id]);
    expect(stats.calls).toEqual([]);
  });

  it("shows the ledger's figures and breakdown, from one BatchGetPartnershipStats call", async () => {
    const { call, fake, ledger, product } = createGateway();
    const seeded = fake.seed(product.productId, "one@example.com");
    ledger.setFigures(seeded.id, 40);
    const response = await call("GET", `/api/v1/affiliates/${seeded.id}`);
    expect(response.statusCode).toBe(200);
    const body = expectBody(partnershipDetailResponseSchema, response.json());
    expect(body.data.stats).toEqual({ clicks: 40, conversions: 41, earned_cents: 4002 });
    expect(body.data.commissions).toEqual({
      pending_count: 43,
      approved_count: 44,
      pending_amount_cents: 4005,
      approved_amount_cents: 4006,
    });
    expect(ledger.requestsOf("batchGetPartnershipStats")).toMatchObject([
      { productId: product.productId, partnershipIds: [seeded.id] },
    ]);
  });

  it("answers 404 { error } for a missing partnership or another product's", async () => {
    const { call, fake } = createGateway();
    const foreign = fake.seed(fake.addProduct("Other").productId, "x@example.com");
    for (const id of ["ptn_missing", foreign.id]) {
      const response = await call("GET", `/api/v1/affiliates/${id}`);
      expect(response.statusCode).toBe(404);
      expect(expectBody(errorSchema, response.json())).toEqual({ error: `Partnership ${id} not found` });
    }
  });
});

describe("PATCH and DELETE /api/v1/affiliates/:id", () => {
  it("changes the status and answers the partnership", async () => {
    const { call, fake, product } = createGateway();
    const pending = fake.seed(product.productId, "p@example.com", PartnershipStatus.PENDING);
    const response = await call("PATCH", `/api/v1/affiliates/${pending.id}`, { body: { status: "active" } });
    expect(response.statusCode).toBe(200);
    expect(expectBody(partnershipResponseSchema, response.json()).data).toMatchObject({
      id: pending.id,
      status: "active",
    });
    expect(fake.requestsOf("updatePartnership")).toMatchObject([
      {
        productId: product.productId,
        partnershipId: pending.id,
        status: PartnershipStatus.ACTIVE,
        commissionOverrideChange: { case: undefined },
      },
    ]);
  });

  it("answers 400 { error } for a transition partners refuses", async () => {
    const { call, fake, product } = createGateway();
    const active = fake.seed(product.productId, "a@example.com");
    const response = await call("PATCH", `/api/v1/affiliates/${active.id}`, { body: { status: "rejected" } });
    expect(response.statusCode).toBe(400);
    expect(expectBody(errorSchema, response.json())).toEqual({
      error: "A partnership cannot go from active to rejected",
    });
  });

  it("answers 400 with the envelope for a status outside active, rejected, removed", async () => {
    const { call, fake, product } = createGateway();
    const active = fake.seed(product.productId, "a@example.com");
    const response = await call("PATCH", `/api/v1/affiliates/${active.id}`, { body: { status: "pending" } });
    expect(response.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, response.json()).details.fieldErrors)).toEqual(["status"]);
    expect(fake.callsOf("updatePartnership")).toBe(0);
  });

  it("DELETE sets the status to removed", async () => {
    const { call, fake, product } = createGateway();
    const active = fake.seed(product.productId, "a@example.com");
    const response = await call("DELETE", `/api/v1/affiliates/${active.id}`);
    expect(response.statusCode).toBe(200);
    expect(expectBody(partnershipResponseSchema, response.json()).data.status).toBe("removed");
    expect(fake.requestsOf("updatePartnershipStatus")).toMatchObject([{ status: PartnershipStatus.REMOVED }]);
  });

  it("answers 404 when deleting another product's partnership", async () => {
    const { call, fake } = createGateway();
    const foreign = fake.seed(fake.addProduct("Other").productId, "x@example.com");
    const response = await call("DELETE", `/api/v1/affiliates/${foreign.id}`);
    expect(response.statusCode).toBe(404);
    expect(fake.partnerships.get(foreign.id)?.status).toBe(PartnershipStatus.ACTIVE);
  });
});
