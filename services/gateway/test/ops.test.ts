import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { partnersReadiness } from "../src/routes/ops.js";
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
  it("GET /healthz answers 200 { status: 'ok' } even when partners is down", async () => {
    const { call } = createGateway({ ready: async () => false });
    const response = await call("GET", "/healthz", { key: null });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: "ok" });
  });

  it("GET /readyz follows the readiness check", async () => {
    let ready = true;
    const { call } = createGateway({ ready: async () => ready });
    expect((await call("GET", "/readyz", { key: null })).statusCode).toBe(200);
    ready = false;
    const response = await call("GET", "/readyz", { key: null });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({ error: "The partners service is not ready" });
    expect(response.headers["retry-after"]).toBe("1");
  });

  it("counts partners ready only when its health check answers SERVING", async () => {
    expect(await partnersReadiness(healthTransport(() => HealthCheckResponse_ServingStatus.SERVING))()).toBe(true);
    expect(await partnersReadiness(healthTransport(() => HealthCheckResponse_ServingStatus.NOT_SERVING))()).toBe(false);
    const failing = healthTransport(() => Promise.reject(new ConnectError("down", Code.Unavailable)));
    expect(await partnersReadiness(failing)()).toBe(false);
  });

  it("gives up on a health check that takes longer than its timeout", async () => {
    const slow = healthTransport(
      () => new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error("too late")), 5000)),
    );
    const started = Date.now();
    expect(await partnersReadiness(slow, 100)()).toBe(false);
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
      expect.arrayContaining(["200", "400", "401", "403", "413", "415", "429", "503"]),
    );
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
