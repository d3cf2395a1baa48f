/**
 * The affiliate API (contract section 14) against the real partners, ledger and payouts: tokens
 * minted by the merchant, each route scoped to the token's partnership, customers masked,
 * payouts explained line by line (a clawback included: the ledger and payouts exchange their
 * events over real JetStream here). Revocation, removal and expiry across gateway replicas, and
 * the emailed sign-in, need the event feed and the notifier: tools/mesh/test/affiliate-access.
 */
import {
  affiliateCommissionListResponseSchema,
  affiliateMeResponseSchema,
  affiliatePayoutListResponseSchema,
  affiliatePayoutResponseSchema,
  affiliateStatsResponseSchema,
  affiliateTokenResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliate-api";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { expectBody } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  // With the ledger and payouts following each other's events: a clawback needs both.
  mesh = await startRealMesh({ payoutEvents: true });
});
afterAll(() => mesh?.close());

/** A request to the affiliate API with `token` as its bearer (none when null). */
function asAffiliate(token: string | null, method: "GET" | "POST" | "OPTIONS", url: string, body?: unknown) {
  return mesh.app.inject({
    method,
    url,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    ...(body !== undefined ? { payload: body as object } : {}),
  });
}

/** A product with hold 0 and a minimum of 1 cent, and one registered affiliate. */
async function program() {
  const { productId, key } = await mesh.newProduct();
  const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown) =>
    mesh.call(key, method, url, body === undefined ? {} : { body });
  await call("PATCH", "/api/v1/program", {
    hold_days: 0,
    payout_minimum_cents: 1,
    referral_url_template: "https://acme.example/?via={code}",
  });
  const register = async (email: string, referralCode: string) => {
    const registered = await call("POST", "/api/v1/affiliates", { email, name: "Jane", referralCode });
    expect(registered.statusCode).toBe(201);
    return registered.json().partnership.id as string;
  };
  const mint = async (partnershipId: string) => {
    const minted = await call("POST", `/api/v1/affiliates/${partnershipId}/tokens`, {});
    expect(minted.statusCode).toBe(201);
    return expectBody(affiliateTokenResponseSchema, minted.json()).data.token;
  };
  const pay = async (referralCode: string, amountCents: number, customerEmail: string) => {
    const paid = await call("POST", "/events", {
      type: "payment",
      referral_code: referralCode,
      amount_cents: amountCents,
      customer_email: customerEmail,
    });
    expect(paid.statusCode).toBe(201);
    return paid.json().data.commissions[0].id as string;
  };
  return { productId, key, call, register, mint, pay };
}

describe("tokens", () => {
  it("are minted for an active partnership: the token reads /affiliate/v1/me", async () => {
    const p = await program();
    const partnershipId = await p.register("jane@example.com", "JANE");
    const minted = await p.call("POST", `/api/v1/affiliates/${partnershipId}/tokens`, { ttl_seconds: 120 });
    expect(minted.statusCode).toBe(201);
    const { token, expires_at } = expectBody(affiliateTokenResponseSchema, minted.json()).data;
    expect(token).toMatch(/^apt_/);
    const lifetime = Date.parse(expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(60_000);
    expect(lifetime).toBeLessThanOrEqual(120_000);

    const me = await asAffiliate(token, "GET", "/affiliate/v1/me");
    expect(me.statusCode).toBe(200);
    expect(expectBody(affiliateMeResponseSchema, me.json()).data).toEqual({
      partnership_id: partnershipId,
      status: "active",
      referral_code: "JANE",
      referral_link: "https://acme.example/?via=JANE",
      joined_at: expect.any(String),
      affiliate: { name: "Jane", email: "jane@example.com" },
      program: { name: "Acme", currency: "usd", hold_days: 0, payout_minimum_cents: 1 },
      rule: {
        source: "program",
        commission_type: "percent",
        commission_rate_bps: 2000,
        commission_flat_cents: null,
        tier2_rate_bps: 500,
        max_commission_months: null,
        max_commission_payments: null,
      },
    });
  });

  it("shows the partnership's own terms when the merchant set an override", async () => {
    const p = await program();
    const partnershipId = await p.register("flat@example.com", "FLAT");
    await p.call("PATCH", `/api/v1/affiliates/${partnershipId}`, {
      commission_override: { commission_type: "flat", commission_flat_cents: 700, max_commission_payments: 3 },
    });
    const me = await asAffiliate(await p.mint(partnershipId), "GET", "/affiliate/v1/me");
    expect(me.json().data.rule).toEqual({
      source: "partnership",
      commission_type: "flat",
      commission_rate_bps: null,
      commission_flat_cents: 700,
      tier2_rate_bps: 500,
      max_commission_months: null,
      max_commission_payments: 3,
    });
  });

  it("are refused for a partnership that is not active, and outside 60-86400 seconds", async () => {
    const p = await program();
    const partnershipId = await p.register("gone@example.com", "GONE");
    for (const ttl_seconds of [59, 86_401, 1.5]) {
      const refused = await p.call("POST", `/api/v1/affiliates/${partnershipId}/tokens`, { ttl_seconds });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().details.fieldErrors.ttl_seconds).toHaveLength(1);
    }
    expect((await p.call("DELETE", `/api/v1/affiliates/${partnershipId}`)).statusCode).toBe(200);
    const removed = await p.call("POST", `/api/v1/affiliates/${partnershipId}/tokens`);
    expect(removed.statusCode).toBe(400);
    expect(removed.json().error).toMatch(/active affiliates only/);
    const other = await program();
    expect((await other.call("POST", `/api/v1/affiliates/${partnershipId}/tokens`)).statusCode).toBe(404);
  });

  it("answers 401 { error } without a live token", async () => {
    const p = await program();
    for (const [token, error] of [
      [null, "Missing bearer token: send Authorization: Bearer apt_…"],
      [p.key, "Invalid or expired affiliate token"],
      ["apt_unknown", "Invalid or expired affiliate token"],
    ] as const) {
      const response = await asAffiliate(token, "GET", "/affiliate/v1/me");
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error });
    }
    // An affiliate token is no API key.
    const partnershipId = await p.register("key@example.com", "KEYS");
    const token = await p.mint(partnershipId);
    const asKey = await mesh.app.inject({ method: "GET", url: "/api/v1/affiliates", headers: { "x-api-key": token } });
    expect(asKey.statusCode).toBe(401);
  });
});

describe("scoping: a token reads its own partnership only", () => {
  it("lists its own commissions and payouts; another partnership's ids are 404", async () => {
    const p = await program();
    const jane = await p.register("jane@example.com", "JANE");
    const ada = await p.register("ada@example.com", "ADA");
    const janes = await p.pay("JANE", 10_000, "john.smith@example.com");
    const adas = await p.pay("ADA", 20_000, "grace@example.org");
    const generated = await p.call("POST", "/api/v1/payouts/generate");
    const payoutOf = (partnershipId: string) =>
      generated.json().data.find((payout: { partnership_id: string }) => payout.partnership_id === partnershipId).id;
    const janeToken = await p.mint(jane);

    const commissions = await asAffiliate(janeToken, "GET", "/affiliate/v1/commissions");
    expect(commissions.statusCode).toBe(200);
    expect(expectBody(affiliateCommissionListResponseSchema, commissions.json()).data).toEqual([
      {
        id: janes,
        status: "approved",
        level: 1,
        amount_cents: 2000,
        payment_amount_cents: 10_000,
        hold_until: expect.any(String),
        hold_reason: null,
        created_at: expect.any(String),
        payout_id: payoutOf(jane),
        rule: expect.objectContaining({ source: "program", type: "percent", rate_bps: 2000 }),
        refund_reason: null,
        customer: "j***@example.com",
      },
    ]);
    const own = await asAffiliate(janeToken, "GET", `/affiliate/v1/commissions/${janes}`);
    expect(own.json().data.id).toBe(janes);
    for (const url of [`/affiliate/v1/commissions/${adas}`, `/affiliate/v1/payouts/${payoutOf(ada)}`]) {
      const foreign = await asAffiliate(janeToken, "GET", url);
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toEqual({ error: expect.stringMatching(/not found/) });
    }

    const payouts = await asAffiliate(janeToken, "GET", "/affiliate/v1/payouts");
    expect(expectBody(affiliatePayoutListResponseSchema, payouts.json()).data.map((payout) => payout.id)).toEqual([
      payoutOf(jane),
    ]);
    const payout = await asAffiliate(janeToken, "GET", `/affiliate/v1/payouts/${payoutOf(jane)}`);
    expect(expectBody(affiliatePayoutResponseSchema, payout.json()).data).toMatchObject({
      amount_cents: 2000,
      lines: [{ kind: "commission", id: janes, amount_cents: 2000, description: `Commission ${janes}` }],
    });
  });

  it("a token of another product never reads this one", async () => {
    const p = await program();
    const other = await program();
    await p.register("jane@example.com", "JANE");
    const commission = await p.pay("JANE", 10_000, "john@example.com");
    const outsider = await other.mint(await other.register("jane@example.com", "JANE"));
    expect((await asAffiliate(outsider, "GET", `/affiliate/v1/commissions/${commission}`)).statusCode).toBe(404);
    const list = await asAffiliate(outsider, "GET", "/affiliate/v1/commissions");
    expect(list.json().data).toEqual([]);
    const stats = await asAffiliate(outsider, "GET", "/affiliate/v1/stats?period=7d");
    expect(stats.json().data).toMatchObject({ conversions: 0, revenue_cents: 0, commissions_cents: 0 });
  });

  it("stats are the partnership's alone, with the previous period and a daily series", async () => {
    const p = await program();
    const jane = await p.register("jane@example.com", "JANE");
    await p.register("ada@example.com", "ADA");
    for (const code of ["JANE", "JANE", "ADA"]) {
      expect((await p.call("POST", "/events", { type: "click", referral_code: code })).statusCode).toBe(201);
    }
    await p.pay("JANE", 10_000, "a@example.com");
    await p.pay("ADA", 50_000, "b@example.com");
    const stats = await asAffiliate(await p.mint(jane), "GET", "/affiliate/v1/stats?period=7d");
    expect(stats.statusCode).toBe(200);
    const data = expectBody(affiliateStatsResponseSchema, stats.json()).data;
    expect(data).toMatchObject({
      period: "7d",
      clicks: 2,
      conversions: 1,
      revenue_cents: 10_000,
      commissions_cents: 2000,
      conversion_rate: 0.5,
      previous_period: { clicks: 0, conversions: 0, revenue_cents: 0, commissions_cents: 0 },
    });
    expect(data.timeseries).toHaveLength(7);
    expect(data.timeseries.at(-1)).toMatchObject({ clicks: 2, conversions: 1, revenue_cents: 10_000 });
    const invalid = await asAffiliate(await p.mint(jane), "GET", "/affiliate/v1/stats?period=1y");
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toEqual({ data: { error: "Invalid period: must be 7d, 30d, 90d or 12m" } });
  });
});

describe("payouts line by line", () => {
  it("after a clawback, the list carries each payout's lines, the detail's, summing to its amount", async () => {
    const p = await program();
    const jane = await p.register("jane@example.com", "JANE");
    await p.register("ada@example.com", "ADA");
    const payoutAction = async (id: string, action: string) =>
      expect((await p.call("PATCH", `/api/v1/payouts/${id}`, { action })).statusCode).toBe(200);
    // A first payout, paid; the ledger settles its commission from payout.completed.
    const clawedBack = await p.pay("JANE", 10_000, "john@example.com");
    const [first] = (await p.call("POST", "/api/v1/payouts/generate")).json().data as { id: string }[];
    const firstId = first?.id ?? "";
    await payoutAction(firstId, "approve");
    await payoutAction(firstId, "mark_paid");
    await vi.waitFor(
      async () => expect((await p.call("GET", `/api/v1/commissions/${clawedBack}`)).json().data.status).toBe("paid"),
      { timeout: 15_000, interval: 100 },
    );
    // Half the payment refunded: 1000 of the paid 2000 is clawed back into the next payout.
    const refund = await p.call("POST", "/api/v1/refunds", {
      commission_id: clawedBack,
      refund_amount_cents: 5000,
      reason: "customer downgraded",
    });
    expect(refund.statusCode).toBe(200);
    const kept = await p.pay("JANE", 10_000, "grace@example.org");
    await p.pay("ADA", 10_000, "alan@example.org");
    const second = await vi.waitFor(
      async () => {
        // Payouts applies the clawback from the refund's event; until then generation waits.
        const generated = (await p.call("POST", "/api/v1/payouts/generate")).json().data as {
          id: string;
          partnership_id: string;
          adjustment_cents: number;
        }[];
        const payout = generated.find((candidate) => candidate.partnership_id === jane);
        expect(payout?.adjustment_cents).toBe(-1000);
        return payout?.id ?? "";
      },
      { timeout: 15_000, interval: 200 },
    );

    const token = await p.mint(jane);
    const list = expectBody(
      affiliatePayoutListResponseSchema,
      (await asAffiliate(token, "GET", "/affiliate/v1/payouts")).json(),
    ).data;
    expect(list.map((payout) => payout.id)).toEqual([second, firstId]);
    for (const payout of list) {
      const detail = await asAffiliate(token, "GET", `/affiliate/v1/payouts/${payout.id}`);
      expect(payout).toEqual(expectBody(affiliatePayoutResponseSchema, detail.json()).data);
      expect(payout.lines.reduce((sum, line) => sum + Number(line.amount_cents), 0)).toBe(payout.amount_cents);
    }
    expect(list[0]).toMatchObject({
      amount_cents: 1000,
      adjustment_cents: -1000,
      lines: [
        { kind: "commission", id: kept, amount_cents: 2000, description: `Commission ${kept}` },
        {
          kind: "adjustment",
          id: expect.stringMatching(/^adj_/),
          amount_cents: -1000,
          description: `Refund of commission ${clawedBack} (customer downgraded)`,
        },
      ],
    });
    // The first payout keeps the commission at the amount it paid.
    expect(list[1]?.lines).toEqual([
      { kind: "commission", id: clawedBack, amount_cents: 2000, description: `Commission ${clawedBack}` },
    ]);
    // Every page carries its payouts' lines.
    const firstPage = await asAffiliate(token, "GET", "/affiliate/v1/payouts?limit=1");
    const page = expectBody(affiliatePayoutListResponseSchema, firstPage.json());
    expect(page.data).toEqual([list[0]]);
    const next = await asAffiliate(token, "GET", `/affiliate/v1/payouts?limit=1&cursor=${page.pagination.next_cursor}`);
    expect(expectBody(affiliatePayoutListResponseSchema, next.json()).data).toEqual([list[1]]);
  });
});

describe("the merchant's side", () => {
  it("external ids: set at registration and by PATCH, found by the list filter, unique (409)", async () => {
    const p = await program();
    const registered = await p.call("POST", "/api/v1/affiliates", { email: "x@example.com", externalId: "user-7" });
    expect(registered.statusCode).toBe(201);
    const id = registered.json().partnership.id;
    const taken = await p.call("POST", "/api/v1/affiliates", { email: "y@example.com", externalId: "user-7" });
    expect(taken.statusCode).toBe(409);
    const found = await p.call("GET", "/api/v1/affiliates?external_id=user-7");
    expect(found.json().data.map((row: { id: string; external_id: string }) => [row.id, row.external_id])).toEqual([
      [id, "user-7"],
    ]);
    const changed = await p.call("PATCH", `/api/v1/affiliates/${id}`, { external_id: "user-8" });
    expect(changed.json().data.external_id).toBe("user-8");
    const bulk = await p.call("POST", "/api/v1/affiliates/bulk", {
      affiliates: [
        { email: "z@example.com", externalId: "user-8" },
        { email: "w@example.com", externalId: "user-9" },
      ],
    });
    expect(bulk.json().results.map((result: { success: boolean }) => result.success)).toEqual([false, true]);
    const cleared = await p.call("PATCH", `/api/v1/affiliates/${id}`, { external_id: null });
    expect(cleared.json().data.external_id).toBeNull();
  });
});

describe("browsers", () => {
  it("any origin may call: CORS on answers and errors, preflight without a token, no cookies", async () => {
    const preflight = await mesh.app.inject({
      method: "OPTIONS",
      url: "/affiliate/v1/commissions",
      headers: { origin: "https://partner.example", "access-control-request-method": "GET" },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("*");
    expect(preflight.headers["access-control-allow-headers"]).toMatch(/authorization/);
    expect(preflight.headers["access-control-allow-credentials"]).toBeUndefined();
    const refused = await asAffiliate(null, "GET", "/affiliate/v1/me");
    expect(refused.headers["access-control-allow-origin"]).toBe("*");
    expect(refused.headers["set-cookie"]).toBeUndefined();
    // The merchant's API stays same-origin.
    const merchant = await mesh.app.inject({ method: "GET", url: "/api/v1/affiliates" });
    expect(merchant.headers["access-control-allow-origin"]).toBeUndefined();
    const merchantPreflight = await mesh.app.inject({
      method: "OPTIONS",
      url: "/api/v1/affiliates",
      headers: { origin: "https://partner.example", "access-control-request-method": "GET" },
    });
    expect(merchantPreflight.statusCode).toBe(404);
    expect(merchantPreflight.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("sign-in: 202 whatever the email; an unknown code is 401", async () => {
    const p = await program();
    await p.register("jane@example.com", "JANE");
    for (const email of ["jane@example.com", "nobody@example.com"]) {
      const response = await asAffiliate(null, "POST", "/affiliate/v1/login", { product_id: p.productId, email });
      expect(response.statusCode).toBe(202);
      expect(response.json().data.status).toBe("accepted");
    }
    const unknown = await asAffiliate(null, "POST", "/affiliate/v1/login", { product_id: "prd_x", email: "a@b.co" });
    expect(unknown.statusCode).toBe(202);
    const exchange = await asAffiliate(null, "POST", "/affiliate/v1/login/exchange", { code: "not-a-code" });
    expect(exchange.statusCode).toBe(401);
    expect(exchange.json()).toEqual({ error: "Invalid, used or expired sign-in code" });
  });
});
