import { DomainError, toConnectError } from "@affiliate/platform";
import type { EraseCustomerRequest } from "@affiliate/proto/privacy";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  eraseCustomerResponseSchema,
  erasureListResponseSchema,
  erasureResponseSchema,
  erasureRunningErrorSchema,
} from "@affiliate/rest-shapes/schemas/customers";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../src/openapi.js";
import { createGateway, expectBody } from "./support/harness.js";

describe("DELETE /api/v1/customers", () => {
  it("erases through privacy with the normalised email and answers spec 4.11's counts plus erasure_id", async () => {
    const { call, privacy, product } = createGateway();
    privacy.pending.set("jane@example.com", { tracking_events: 3, commissions: 2, affiliate_profiles: 1 });
    const response = await call("DELETE", "/api/v1/customers", { body: { email: "  Jane@Example.COM " } });
    expect(response.statusCode).toBe(200);
    const body = expectBody(eraseCustomerResponseSchema, response.json());
    expect(body).toEqual({
      data: {
        anonymized: { tracking_events: 3, webhook_deliveries: 0, affiliate_profiles_scrubbed: 1 },
        erasure_id: expect.stringMatching(/^ers_/),
      },
    });
    expect(privacy.requestsOf("eraseCustomer")).toEqual([
      expect.objectContaining({ productId: product.productId, email: "jane@example.com" }),
    ] satisfies Partial<EraseCustomerRequest>[]);
  });

  it("answers the validation envelope for a missing or invalid email, without calling privacy", async () => {
    const { call, privacy } = createGateway();
    for (const body of [{}, { email: "not-an-email" }, { email: 42 }]) {
      const response = await call("DELETE", "/api/v1/customers", { body });
      expect(response.statusCode).toBe(400);
      const envelope = expectBody(validationErrorSchema, response.json());
      expect(Object.keys(envelope.details.fieldErrors)).toEqual(["email"]);
    }
    expect(privacy.callsOf("eraseCustomer")).toBe(0);
  });

  it("answers 503 with the erasure id when the erasure completes in the background", async () => {
    const { call, privacy } = createGateway();
    const running = DomainError.withInfo("unavailable", "The erasure is recorded and still running", {
      reason: "erasure_running",
      details: { erasure_id: "ers_0123" },
    });
    privacy.failures.set("eraseCustomer", toConnectError(running));
    const response = await call("DELETE", "/api/v1/customers", { body: { email: "jane@example.com" } });
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(expectBody(erasureRunningErrorSchema, response.json())).toEqual({
      error: "The erasure is recorded and still running",
      details: { erasure_id: "ers_0123" },
    });
  });

  it("answers the generic 503 when privacy cannot be reached", async () => {
    const { call, privacy } = createGateway();
    privacy.failures.set("eraseCustomer", new ConnectError("connect ECONNREFUSED", Code.Unavailable));
    const response = await call("DELETE", "/api/v1/customers", { body: { email: "jane@example.com" } });
    expect(response.statusCode).toBe(503);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Service temporarily unavailable" });
  });

  it("needs a live key", async () => {
    const { call, product } = createGateway();
    const body = { email: "jane@example.com" };
    expect((await call("DELETE", "/api/v1/customers", { key: null, body })).statusCode).toBe(401);
    expect((await call("DELETE", "/api/v1/customers", { key: product.testKey, body })).statusCode).toBe(403);
  });
});

describe("erasure receipts", () => {
  it("reads one receipt, and lists an email's receipts newest first", async () => {
    const { call, privacy } = createGateway();
    privacy.pending.set("jane@example.com", { tracking_events: 2 });
    const first = (await call("DELETE", "/api/v1/customers", { body: { email: "jane@example.com" } })).json();
    const second = (await call("DELETE", "/api/v1/customers", { body: { email: "jane@example.com" } })).json();

    const read = await call("GET", `/api/v1/customers/erasures/${first.data.erasure_id}`);
    expect(read.statusCode).toBe(200);
    expect(expectBody(erasureResponseSchema, read.json())).toEqual({
      data: {
        id: first.data.erasure_id,
        status: "completed",
        requested_at: "2026-01-02T03:04:05.678Z",
        completed_at: "2026-01-02T03:04:05.678Z",
        stores: [
          { store: "affiliate_profiles", records: 0 },
          { store: "commissions", records: 0 },
          { store: "tracking_events", records: 2 },
          { store: "webhook_deliveries", records: 0 },
        ],
        verified_at: "2026-01-02T03:04:05.678Z",
      },
    });

    const list = await call("GET", "/api/v1/customers/erasures?email=%20JANE@example.com");
    expect(list.statusCode).toBe(200);
    const ids = expectBody(erasureListResponseSchema, list.json()).data.map((erasure) => erasure.id);
    expect(ids).toEqual([second.data.erasure_id, first.data.erasure_id]);
  });

  it("answers 404 for an unknown receipt and 400 for a list without a valid email", async () => {
    const { call } = createGateway();
    const missing = await call("GET", "/api/v1/customers/erasures/ers_unknown");
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "Erasure ers_unknown not found" });
    const noEmail = await call("GET", "/api/v1/customers/erasures");
    expect(noEmail.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, noEmail.json()).details.fieldErrors)).toEqual(["email"]);
  });

  it("documents the three routes in the OpenAPI document", async () => {
    const { app } = createGateway();
    await app.ready();
    const paths = openApiDocument(app.routeCatalog).paths ?? {};
    expect(paths["/api/v1/customers"]?.delete?.operationId).toBe("eraseCustomer");
    expect(paths["/api/v1/customers/erasures"]?.get?.operationId).toBe("listErasures");
    expect(paths["/api/v1/customers/erasures/{id}"]?.get?.operationId).toBe("getErasure");
  });
});
