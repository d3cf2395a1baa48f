import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { Code, ConnectError, createRouterTransport, type Transport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { openApiPath } from "../src/http/route-catalog.js";
import { gatewayReadiness, readinessOf, serviceHealth } from "../src/routes/ops.js";
import { pathOf } from "./support/declared-routes.js";
import { createGateway } from "./support/harness.js";

function healthTransport(answer: () => HealthCheckResponse_ServingStatus | Promise<never>) {
  return createRouterTransport(({ service }) =>
    service(Health, {
      check: async () => ({ status: await answer() }),
      list: async () => ({ statuses: {} }),
      async *watch() {},
    }),
  );
}

describe("probes", () => {
  it("GET /healthz answers 200 { status: 'ok' } even when partners and the ledger are down", async () => {
    const { call } = createGateway({ ready: async () => ["partners", "ledger"] });
    const response = await call("GET", "/healthz", { key: null });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: "ok" });
  });

  it("GET /readyz answers 200 when nothing is missing, else 503 naming what is not ready", async () => {
    let notReady: string[] = [];
    const { call } = createGateway({ ready: async () => notReady });
    const ready = await call("GET", "/readyz", { key: null });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: "ready" });
    notReady = ["ledger"];
    const response = await call("GET", "/readyz", { key: null });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ error: "Not ready: ledger" });
    expect(response.headers["retry-after"]).toBe("1");
  });

  it("is ready only when partners, the ledger, payouts, the notifier AND privacy answer SERVING", async () => {
    const serving = healthTransport(() => HealthCheckResponse_ServingStatus.SERVING);
    const notServing = healthTransport(() => HealthCheckResponse_ServingStatus.NOT_SERVING);
    const down = healthTransport(() => Promise.reject(new ConnectError("down", Code.Unavailable)));
    const readiness = (
      partners: Transport,
      ledger: Transport,
      payouts: Transport,
      notifier = serving,
      privacy = serving,
    ) => gatewayReadiness({ partners, ledger, payouts, notifier, privacy })();
    expect(await readiness(serving, serving, serving)).toEqual([]);
    expect(await readiness(serving, notServing, serving)).toEqual(["ledger"]);
    expect(await readiness(down, serving, serving)).toEqual(["partners"]);
    expect(await readiness(serving, serving, notServing)).toEqual(["payouts"]);
    expect(await readiness(serving, serving, down)).toEqual(["payouts"]);
    expect(await readiness(notServing, down, down)).toEqual(["partners", "ledger", "payouts"]);
    expect(await readiness(serving, serving, serving, down)).toEqual(["notifier"]);
    expect(await readiness(serving, serving, serving, serving, down)).toEqual(["privacy"]);

    const { call } = createGateway({
      ready: gatewayReadiness({
        partners: serving,
        ledger: down,
        payouts: serving,
        notifier: serving,
        privacy: serving,
      }),
    });
    const response = await call("GET", "/readyz", { key: null });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ error: "Not ready: ledger" });

    const withoutPayouts = createGateway({
      ready: gatewayReadiness({
        partners: serving,
        ledger: serving,
        payouts: down,
        notifier: serving,
        privacy: serving,
      }),
    });
    const payoutsDown = await withoutPayouts.call("GET", "/readyz", { key: null });
    expect(payoutsDown.statusCode).toBe(503);
    expect(payoutsDown.json()).toEqual({ error: "Not ready: payouts" });
  });

  it("counts a check that throws as not ready", async () => {
    const throwing = async (): Promise<boolean> => {
      throw new Error("broken check");
    };
    expect(await readinessOf({ partners: async () => true, ledger: throwing })()).toEqual(["ledger"]);
  });

  it("counts a service ready only when its health check answers SERVING", async () => {
    expect(await serviceHealth(healthTransport(() => HealthCheckResponse_ServingStatus.SERVING))()).toBe(true);
    expect(await serviceHealth(healthTransport(() => HealthCheckResponse_ServingStatus.NOT_SERVING))()).toBe(false);
    const failing = healthTransport(() => Promise.reject(new ConnectError("down", Code.Unavailable)));
    expect(await serviceHealth(failing)()).toBe(false);
  });

  it("gives up on a health check that takes longer than its timeout", async () => {
    const slow = healthTransport(
      () => new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error("too late")), 5000)),
    );
    const started = Date.now();
    expect(await serviceHealth(slow, 100)()).toBe(false);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("documentation", () => {
  it("serves an OpenAPI 3.1 document of the routes, their schemas and the key scheme", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/openapi.json", { key: null });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        "/api/v1/affiliates",
        "/api/v1/affiliates/bulk",
        "/api/v1/affiliates/{id}",
        "/api/v1/program",
        "/healthz",
        "/readyz",
      ]),
    );
    expect(Object.keys(document.paths["/api/v1/affiliates/{id}"]).sort()).toEqual(["delete", "get", "patch"]);
    expect(document.components.securitySchemes.apiKey).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "x-api-key",
    });
    expect(document.security).toEqual([{ apiKey: [] }]);
    expect(document.paths["/healthz"].get.security).toEqual([]);

    // Built from the routes' own schemas: the rules the routes enforce appear in the document.
    const list = document.paths["/api/v1/affiliates"].get;
    const limit = list.parameters.find((parameter: { name: string }) => parameter.name === "limit");
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 });
    const registration = document.components.schemas.AffiliateRegistration;
    expect(registration.required).toEqual(["email"]);
    expect(registration.properties.referralCode.pattern).toBe("^[A-Za-z0-9_-]{3,50}$");
    expect(document.paths["/api/v1/affiliates/bulk"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/BulkRegisterRequest",
    });
    expect(document.components.schemas.BulkRegisterRequest.properties.affiliates).toMatchObject({
      minItems: 1,
      maxItems: 100,
      items: { $ref: "#/components/schemas/AffiliateRegistration" },
    });
    expect(document.components.schemas.UpdateProgramRequest.additionalProperties).toBe(false);
    expect(document.components.schemas.ValidationError.required).toEqual(["error", "details"]);
    expect(Object.keys(document.paths["/api/v1/program"].patch.responses)).toEqual(
      expect.arrayContaining(["200", "400", "401", "403", "413", "415", "429", "503", "504"]),
    );
  });

  it("puts the affiliateToken scheme on exactly the /affiliate/v1 routes that refuse a request without a token", async () => {
    const { app, call } = createGateway();
    await app.ready();
    const document = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    expect(document.components.securitySchemes.affiliateToken).toMatchObject({ type: "http", scheme: "bearer" });
    // Which routes need a token is asked of the routes themselves (a request without one), not
    // of the declarations the document is written from: a route guarded by one thing and
    // documented as another fails here.
    const routes = app.routeCatalog.declared().filter((route) => route.url.startsWith("/affiliate/v1/"));
    const tokenRoutes: string[] = [];
    const openRoutes: string[] = [];
    for (const route of routes) {
      const answer = await call(
        route.method,
        pathOf(route, () => "x"),
        { key: null },
      );
      const operation = document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      const name = `${route.method} ${route.url}`;
      if (answer.statusCode === 401) {
        tokenRoutes.push(name);
        expect(operation?.security, name).toEqual([{ affiliateToken: [] }]);
      } else {
        openRoutes.push(name);
        // Public: no scheme at all, so the document-wide apiKey requirement is lifted too.
        expect(operation?.security, name).toEqual([]);
      }
    }
    expect(tokenRoutes).toEqual(
      expect.arrayContaining([
        "GET /affiliate/v1/me",
        "GET /affiliate/v1/stats",
        "GET /affiliate/v1/commissions",
        "GET /affiliate/v1/commissions/:id",
        "GET /affiliate/v1/payouts",
        "GET /affiliate/v1/payouts/:id",
      ]),
    );
    expect(openRoutes.sort()).toEqual(["POST /affiliate/v1/login", "POST /affiliate/v1/login/exchange"]);
    await app.close();
  });

  it("documents tracking, commissions and stats from the routes' own schemas", async () => {
    const { call } = createGateway();
    const document = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        "/events",
        "/api/v1/commissions",
        "/api/v1/commissions/{id}",
        "/api/v1/stats",
        "/api/v1/stats/timeseries",
      ]),
    );
    expect(Object.keys(document.paths["/api/v1/commissions/{id}"]).sort()).toEqual(["get", "patch"]);
    expect(Object.keys(document.paths["/api/v1/commissions/{id}/review"])).toEqual(["post"]);

    const track = document.paths["/events"].post;
    expect(Object.keys(track.responses).sort()).toEqual(
      ["200", "201", "400", "401", "403", "404", "409", "413", "415", "429", "503", "504"].sort(),
    );
    // Test keys are welcome here; publishable keys (pk_) are 403: they record clicks only.
    expect(track.responses["403"].description).toContain("pk_live_");
    const event = document.components.schemas.TrackEventRequest;
    expect(event.required).toEqual(["type"]);
    expect(event.properties.amount_cents).toMatchObject({ type: "integer", minimum: 1, maximum: 100_000_000_000 });
    expect(event.properties.visitor_id).toMatchObject({ minLength: 1, maxLength: 128 });
    expect(event.properties.occurred_at).toMatchObject({ type: "string", format: "date-time" });
    expect(document.components.schemas.TrackingEventType.enum).toEqual(["click", "signup", "payment"]);

    const commission = document.components.schemas.Commission;
    expect(Object.keys(commission.properties)).toEqual([
      "id",
      "amount_cents",
      "status",
      "level",
      "parent_commission_id",
      "hold_until",
      "created_at",
      "affiliate",
      "referral_code",
      "customer_email",
      "payment_amount_cents",
      "payout_id",
      "hold_reason",
      "rule",
      "flags",
      "review",
      "attribution",
    ]);
    expect(commission.properties.hold_reason).toEqual({ $ref: "#/components/schemas/HoldReason" });
    expect(document.components.schemas.HoldReason.anyOf).toEqual([
      { type: "string", enum: ["dispute", "review"] },
      { type: "null" },
    ]);
    expect(document.components.schemas.CommissionStatus.enum).toEqual([
      "pending",
      "approved",
      "paid",
      "rejected",
      "refunded",
    ]);
    const list = document.paths["/api/v1/commissions"].get;
    expect(list.parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
      "status",
      "partnership_id",
      "payout_id",
      "flagged",
      "cursor",
      "limit",
    ]);
    expect(document.components.schemas.UpdateCommissionRequest.properties.reason.maxLength).toBe(500);

    for (const path of ["/api/v1/stats", "/api/v1/stats/timeseries"]) {
      const operation = document.paths[path].get;
      expect(operation.parameters[0]).toMatchObject({ name: "period", schema: { default: "30d" } });
      // An invalid period is the nested error; an unknown query parameter the envelope (contract 11).
      expect(operation.responses["400"].content["application/json"].schema.anyOf).toEqual([
        { $ref: "#/components/schemas/NestedError" },
        { $ref: "#/components/schemas/ValidationError" },
      ]);
    }
    expect(document.components.schemas.Period.enum).toEqual(["7d", "30d", "90d", "12m"]);
    expect(document.components.schemas.NestedError.required).toEqual(["data"]);
    expect(Object.keys(document.components.schemas.Stats.properties)).toEqual([
      "period",
      "clicks",
      "signups",
      "conversions",
      "revenue_cents",
      "commissions_cents",
      "conversion_rate",
      "active_affiliates",
      "previous_period",
    ]);
  });

  it("documents refunds and payouts from the routes' own schemas", async () => {
    const { call } = createGateway();
    const document = (await call("GET", "/api/v1/openapi.json", { key: null })).json();
    expect(Object.keys(document.paths["/api/v1/refunds"])).toEqual(["post"]);
    expect(Object.keys(document.paths["/api/v1/payouts"])).toEqual(["get"]);
    expect(Object.keys(document.paths["/api/v1/payouts/generate"])).toEqual(["post"]);
    expect(Object.keys(document.paths["/api/v1/payouts/{id}"]).sort()).toEqual(["get", "patch"]);

    const refund = document.paths["/api/v1/refunds"].post;
    expect(refund.parameters).toEqual([
      expect.objectContaining({
        in: "header",
        name: "Idempotency-Key",
        schema: expect.objectContaining({ minLength: 1, maxLength: 128 }),
      }),
    ]);
    expect(Object.keys(refund.responses).sort()).toEqual(
      ["200", "400", "401", "403", "404", "409", "413", "415", "422", "429", "503", "504"].sort(),
    );
    expect(refund.responses["200"].headers["Idempotent-Replayed"].schema).toMatchObject({ const: "true" });
    expect(refund.responses["409"].content["application/json"].schema.anyOf).toEqual([
      { $ref: "#/components/schemas/AlreadyRefundedError" },
      { $ref: "#/components/schemas/AmbiguousPaymentError" },
      { $ref: "#/components/schemas/Error" },
    ]);
    expect(refund.responses["422"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/RefundOutOfRangeError",
    });
    const schemas = document.components.schemas;
    expect(schemas.AlreadyRefundedError.properties.details.required).toEqual(["commission_id"]);
    expect(schemas.AmbiguousPaymentError.properties.error).toMatchObject({ const: "ambiguous_payment" });
    expect(schemas.RefundOutOfRangeError.properties.details.required).toEqual(["payment_amount_cents"]);
    const body = schemas.RefundRequest;
    expect(Object.keys(body.properties)).toEqual([
      "commission_id",
      "external_id",
      "email",
      "payment_amount_cents",
      "refund_amount_cents",
      "reason",
      "idempotency_key",
    ]);
    expect(body.required).toBeUndefined();
    expect(body.properties.reason.maxLength).toBe(500);
    expect(body.properties.idempotency_key).toMatchObject({ minLength: 1, maxLength: 128 });
    expect(body.properties.refund_amount_cents.type).toBe("integer");
    // Any sign: the bounds depend on the payment and are the ledger's 422.
    expect(body.properties.refund_amount_cents.minimum).toBe(Number.MIN_SAFE_INTEGER);
    expect(Object.keys(schemas.RefundResult.properties)).toEqual([
      "commission_id",
      "partnership_id",
      "payment_amount_cents",
      "refund_amount_cents",
      "previous_commission_cents",
      "new_commission_cents",
      "status",
      "fully_refunded",
    ]);

    expect(Object.keys(schemas.Payout.properties)).toEqual([
      "id",
      "status",
      "amount_cents",
      "adjustment_cents",
      "partnership_id",
      "affiliate",
      "commission_count",
      "created_at",
      "approved_at",
      "paid_at",
      "gateway_transfer_id",
    ]);
    expect(schemas.PayoutStatus.enum).toEqual(["pending", "approved", "failed", "processing", "completed"]);
    expect(schemas.UpdatePayoutRequest.properties.action.enum).toEqual([
      "approve",
      "reject",
      "mark_paid",
      "mark_failed",
    ]);
    expect(schemas.UpdatePayoutRequest.properties.reference.maxLength).toBe(500);
    const list = document.paths["/api/v1/payouts"].get;
    expect(list.parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
      "status",
      "partnership_id",
      "cursor",
      "limit",
    ]);
    const patch = document.paths["/api/v1/payouts/{id}"].patch;
    expect(Object.keys(patch.responses)).toEqual(expect.arrayContaining(["200", "400", "404"]));
    expect(document.paths["/api/v1/payouts/generate"].post.requestBody.required).toBe(false);
  });

  it("renders the document at /docs", async () => {
    const { app } = createGateway();
    const page = await app.inject({ method: "GET", url: "/docs" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.body).toContain("swagger");
    const served = await app.inject({ method: "GET", url: "/docs/json" });
    expect(served.json().paths["/api/v1/affiliates/bulk"]).toBeDefined();
  });
});
