/**
 * Contract section 11, "Bad text": U+0000 or an unpaired surrogate in any string a route reads
 * (body field, query parameter, header) is a 400 validation envelope naming that field; in a
 * path id it is the 404 of an unknown id. Nothing reaches a service. Lengths count characters.
 */
import { badTextMessage } from "@affiliate/contract-rules";
import { bulkRegisterResponseSchema } from "@affiliate/rest-shapes/schemas/affiliates";
import { invalidPayoutActionMessage } from "@affiliate/rest-shapes/schemas/payouts";
import { invalidPeriodMessage } from "@affiliate/rest-shapes/schemas/stats";
import { describe, expect, it } from "vitest";
import { declaredRoutes, pathOf, textFieldsOf } from "./support/declared-routes.js";
import { createGateway, expectBody } from "./support/harness.js";

const nul = "ab\u0000cd";
const loneHigh = "ab\uD800cd";
const loneLow = "\uDC00";
const badValues = { "U+0000": nul, "a lone high surrogate": loneHigh, "a lone low surrogate": loneLow };

type Method = "POST" | "PUT" | "PATCH" | "GET" | "DELETE";

/** Fields with a fixed vocabulary or format: bad text fails that rule, whose message is the field's own. */
const formatted = new Set([
  "status",
  "type",
  "action",
  "occurred_at",
  "since",
  "until",
  "commission_type",
  "outcome",
  "format",
  "flagged",
  "decision",
]);

/** A request with one bad body field, by route: a valid body, and which field to spoil. */
const bodyFields: { method: Method; url: string; body: Record<string, unknown>; field: string }[] = [
  ...["email", "name", "referralCode", "sponsorReferralCode"].map((field) => ({
    method: "POST" as const,
    url: "/api/v1/affiliates",
    body: { email: "jane@example.com", name: "Jane", referralCode: "jane-1", sponsorReferralCode: "ada-1" },
    field,
  })),
  {
    method: "POST",
    url: "/api/v1/affiliates",
    body: { email: "jane@example.com", externalId: "u1" },
    field: "externalId",
  },
  { method: "PATCH", url: "/api/v1/affiliates/ptn_1", body: { status: "removed" }, field: "status" },
  { method: "PATCH", url: "/api/v1/affiliates/ptn_1", body: { external_id: "u1" }, field: "external_id" },
  ...["product_id", "email"].map((field) => ({
    method: "POST" as const,
    url: "/affiliate/v1/login",
    body: { product_id: "prd_1", email: "jane@example.com" },
    field,
  })),
  { method: "POST", url: "/affiliate/v1/login/exchange", body: { code: "abc" }, field: "code" },
  ...["referral_code", "visitor_id", "type"].map((field) => ({
    method: "POST" as const,
    url: "/events",
    body: { type: "click", referral_code: "jane-1", visitor_id: "vis_1" },
    field,
  })),
  ...["referral_code", "visitor_id", "referrer"].map((field) => ({
    method: "POST" as const,
    url: "/events/click",
    body: { referral_code: "jane-1", visitor_id: "vis_1", referrer: "https://blog.example/" },
    field,
  })),
  ...["customer_email", "provider_customer_id", "external_id", "occurred_at", "ip", "user_agent"].map((field) => ({
    method: "POST" as const,
    url: "/events",
    body: {
      type: "payment",
      amount_cents: 1000,
      customer_email: "c@example.com",
      provider_customer_id: "cus_1",
      external_id: "ch_1",
      occurred_at: new Date().toISOString(),
      ip: "192.0.2.1",
      user_agent: "Mozilla/5.0",
    },
    field,
  })),
  ...[
    "type",
    "referral_code",
    "visitor_id",
    "customer_email",
    "provider_customer_id",
    "external_id",
    "occurred_at",
    "ip",
    "user_agent",
  ].map((field) => ({
    method: "POST" as const,
    url: "/api/v1/commissions/preview",
    body: {
      type: "payment",
      referral_code: "jane-1",
      visitor_id: "vis_1",
      amount_cents: 1000,
      customer_email: "c@example.com",
      provider_customer_id: "cus_1",
      external_id: "ch_1",
      occurred_at: new Date().toISOString(),
      ip: "192.0.2.1",
      user_agent: "Mozilla/5.0",
    },
    field,
  })),
  ...["commission_type", "referral_url_template"].map((field) => ({
    method: "PATCH" as const,
    url: "/api/v1/program",
    body: { commission_type: "percent", referral_url_template: "https://acme.com/?ref={code}" },
    field,
  })),
  { method: "PATCH", url: "/api/v1/commissions/com_1", body: { action: "reject", reason: "fraud" }, field: "reason" },
  { method: "PATCH", url: "/api/v1/commissions/com_1", body: { action: "reject" }, field: "action" },
  ...["decision", "note"].map((field) => ({
    method: "POST" as const,
    url: "/api/v1/commissions/com_1/review",
    body: { decision: "reject", note: "own purchase" },
    field,
  })),
  ...["commission_id", "reason", "idempotency_key"].map((field) => ({
    method: "POST" as const,
    url: "/api/v1/refunds",
    body: { commission_id: "com_1", reason: "duplicate", idempotency_key: "k1" },
    field,
  })),
  { method: "POST", url: "/api/v1/refunds", body: { external_id: "ch_1" }, field: "external_id" },
  { method: "POST", url: "/api/v1/refunds", body: { email: "c@example.com", payment_amount_cents: 1 }, field: "email" },
  {
    method: "PATCH",
    url: "/api/v1/payouts/po_1",
    body: { action: "mark_paid", reference: "tr_1" },
    field: "reference",
  },
  { method: "PATCH", url: "/api/v1/payouts/po_1", body: { action: "mark_failed", reason: "bounced" }, field: "reason" },
  { method: "PATCH", url: "/api/v1/payouts/po_1", body: { action: "approve" }, field: "action" },
  { method: "POST", url: "/api/v1/webhooks", body: { url: "https://example.com/hooks" }, field: "url" },
  { method: "DELETE", url: "/api/v1/customers", body: { email: "c@example.com" }, field: "email" },
  { method: "PATCH", url: "/api/v1/webhooks/wh_1", body: { url: "https://example.com/hooks" }, field: "url" },
  ...["since", "until"].map((field) => ({
    method: "POST" as const,
    url: "/api/v1/webhooks/wh_1/recover",
    body: { since: "2025-01-01T00:00:00Z", until: "2025-01-02T00:00:00Z" },
    field,
  })),
  ...["webhook_secret", "api_key"].map((field) => ({
    method: "PUT" as const,
    url: "/api/v1/integrations/stripe",
    body: { webhook_secret: "whsec_abc", api_key: "rk_live_abc" },
    field,
  })),
  {
    method: "POST",
    url: "/api/v1/integrations/stripe/reconcile",
    body: { since: "2025-01-01T00:00:00Z" },
    field: "since",
  },
];

const routes = await declaredRoutes();

/** Every text query parameter of every route that reads its query with its schema (stats: below). */
const queryFields = routes
  .filter((route) => route.declaration.query !== undefined && route.declaration.parseQuery === undefined)
  .flatMap((route) =>
    textFieldsOf(route.declaration.query).map((field) => ({
      method: route.method,
      url: pathOf(route, () => "id_1"),
      field,
    })),
  );

/** Every path id of every route, and the resource its owner words an unknown one as. */
const pathIds = routes.flatMap((route) =>
  Object.entries(route.declaration.pathResources ?? {}).map(([param, resource]) => ({
    method: route.method,
    url: (id: string) => pathOf(route, (name) => (name === param ? id : "id_1")),
    resource,
  })),
);

/** RPCs the gateway made beyond resolving the key. */
const rpcCount = (gateway: ReturnType<typeof createGateway>) =>
  [...gateway.fake.requests, ...gateway.ledger.requests, ...gateway.payouts.requests].filter(
    (entry) => !entry.method.startsWith("authenticate"),
  ).length;

describe("bad text in a body field", () => {
  for (const { method, url, body, field } of bodyFields) {
    for (const [what, value] of Object.entries(badValues)) {
      it(`${method} ${url} ${field} with ${what}: 400 naming ${field}, no RPC`, async () => {
        const gateway = createGateway();
        const before = rpcCount(gateway);
        const response = await gateway.call(method, url, { body: { ...body, [field]: value } });
        expect(response.statusCode).toBe(400);
        if (url.startsWith("/api/v1/payouts") && field === "action") {
          expect(response.json()).toEqual({ error: invalidPayoutActionMessage });
        } else {
          expect(response.json()).toMatchObject({
            error: "Validation failed",
            details: {
              fieldErrors: {
                [field]: formatted.has(field) ? [expect.any(String)] : [badTextMessage],
              },
            },
          });
        }
        expect(rpcCount(gateway) - before).toBe(0);
      });
    }
  }
});

describe("the matrix covers every route", () => {
  it("spoils every text field of every declared body", () => {
    const pattern = (url: string) => new RegExp(`^${url.replace(/:[A-Za-z0-9_]+/g, "[^/]+")}$`);
    const missing = routes.flatMap((route) =>
      textFieldsOf(route.declaration.body)
        .filter(
          (field) =>
            !bodyFields.some(
              (entry) => entry.method === route.method && entry.field === field && pattern(route.url).test(entry.url),
            ),
        )
        .map((field) => `${route.method} ${route.url} ${field}`),
    );
    expect(missing).toEqual([]);
  });
});

describe("bad text in a query parameter", () => {
  for (const { method, url, field } of queryFields) {
    it(`${method} ${url}?${field}=<U+0000>: 400 naming ${field}, no RPC`, async () => {
      const gateway = createGateway();
      const before = rpcCount(gateway);
      const response = await gateway.call(method, `${url}?${field}=${encodeURIComponent(nul)}`);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        error: "Validation failed",
        details: { fieldErrors: { [field]: [formatted.has(field) ? expect.any(String) : badTextMessage] } },
      });
      expect(rpcCount(gateway) - before).toBe(0);
    });
  }

  it("percent-encoding of a surrogate (CESU-8 bytes, not UTF-8) reaches a service as harmless text", async () => {
    const gateway = createGateway();
    const response = await gateway.call("GET", "/api/v1/commissions?partnership_id=%ED%A0%80");
    // The query parser keeps bytes it cannot decode as they were written.
    expect(response.statusCode).toBe(200);
    expect(gateway.ledger.requestsOf("listCommissions")).toMatchObject([{ partnershipId: "%ED%A0%80" }]);
  });

  it("the stats period keeps its own nested 400", async () => {
    const gateway = createGateway();
    for (const url of ["/api/v1/stats", "/api/v1/stats/timeseries"]) {
      const response = await gateway.call("GET", `${url}?period=${encodeURIComponent(nul)}`);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ data: { error: invalidPeriodMessage } });
    }
  });
});

describe("bad text in a header the gateway reads", () => {
  for (const [what, value] of Object.entries(badValues)) {
    it(`Idempotency-Key with ${what}: 400 on idempotency_key, no RPC`, async () => {
      const gateway = createGateway();
      const response = await gateway.call("POST", "/api/v1/refunds", {
        body: { commission_id: "com_1" },
        headers: { "idempotency-key": value },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({
        error: "Validation failed",
        details: { formErrors: [], fieldErrors: { idempotency_key: [`Idempotency-Key header: ${badTextMessage}`] } },
      });
      expect(gateway.ledger.requests).toEqual([]);
    });
  }
});

describe("bad text in a path id", () => {
  for (const { method, url, resource } of pathIds) {
    it(`${method} ${url(":id")} with U+0000: the 404 of an unknown id, no RPC`, async () => {
      const gateway = createGateway();
      const before = rpcCount(gateway);
      const response = await gateway.call(method, url(encodeURIComponent(nul)));
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: `${resource} ${nul} not found` });
      expect(rpcCount(gateway) - before).toBe(0);
    });

    it(`${method} ${url(":id")} with percent-encoding that is not UTF-8: 404`, async () => {
      const gateway = createGateway();
      const response = await gateway.call(method, url("%ED%A0%80"));
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: "Not found" });
    });
  }
});

describe("bulk registration", () => {
  it("an entry with bad text fails alone; the valid entries are registered", async () => {
    const gateway = createGateway();
    const response = await gateway.call("POST", "/api/v1/affiliates/bulk", {
      body: {
        notify: false,
        affiliates: [
          { email: "ada@example.com", name: "Ada" },
          { email: "nul@example.com", name: nul },
          { email: `lone${loneLow}@example.com` },
          { email: "grace@example.com" },
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    const body = expectBody(bulkRegisterResponseSchema, response.json());
    expect(body.results).toMatchObject([
      { email: "ada@example.com", success: true, action: "created" },
      { email: "nul@example.com", success: false, error: `name: ${badTextMessage}` },
      { email: `lone${loneLow}@example.com`, success: false, error: `email: ${badTextMessage}` },
      { email: "grace@example.com", success: true, action: "created" },
    ]);
    expect(body.summary).toEqual({ total: 4, created: 2, joined: 0, reactivated: 0, failed: 2 });
    // Only the valid entries travelled to partners, and partners holds exactly them.
    expect(gateway.fake.requestsOf("bulkRegisterAffiliates")).toMatchObject([
      { registrations: [{ email: "ada@example.com" }, { email: "grace@example.com" }] },
    ]);
    expect([...gateway.fake.partnerships.values()].map((p) => p.affiliate?.email).sort()).toEqual([
      "ada@example.com",
      "grace@example.com",
    ]);
  });
});

describe("lengths count characters", () => {
  const emoji = "\u{1F600}";

  it("200 emoji are a valid name (400 UTF-16 units); 201 are too many", async () => {
    const gateway = createGateway();
    const ok = await gateway.call("POST", "/api/v1/affiliates", {
      body: { email: "emoji@example.com", name: emoji.repeat(200) },
    });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().affiliate.name).toBe(emoji.repeat(200));
    const tooLong = await gateway.call("POST", "/api/v1/affiliates", {
      body: { email: "emoji2@example.com", name: emoji.repeat(201) },
    });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().details.fieldErrors).toEqual({ name: ["Too big: expected string to have <=200 characters"] });
  });

  it("a refund reason of 500 emoji is accepted, an idempotency key of 129 is not", async () => {
    const gateway = createGateway();
    const reason = await gateway.call("POST", "/api/v1/refunds", {
      body: { commission_id: "com_1", reason: emoji.repeat(500), idempotency_key: emoji.repeat(129) },
    });
    expect(reason.statusCode).toBe(400);
    expect(reason.json().details.fieldErrors).toEqual({
      idempotency_key: ["Too big: expected string to have <=128 characters"],
    });
  });
});
