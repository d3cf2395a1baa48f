import { createRpcTransport, DomainError, toConnectError } from "@affiliate/platform";
import { errorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { PartnershipStatsSource } from "../src/stats-source.js";
import { closedPort } from "./support/closed-port.js";
import { capturingLogger, createGateway, expectBody } from "./support/harness.js";

describe("request errors", () => {
  it("answers 400 { error } for malformed JSON", async () => {
    const { call, fake } = createGateway();
    const response = await call("POST", "/api/v1/affiliates", {
      payload: '{"email": "a@example.com",',
      headers: { "content-type": "application/json" },
    });
    expect(response.statusCode).toBe(400);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Malformed JSON in request body" });
    expect(fake.callsOf("registerAffiliate")).toBe(0);
  });

  it("reads a JSON request without a body as {} (contract section 11)", async () => {
    const { call, payouts } = createGateway();
    const generated = await call("POST", "/api/v1/payouts/generate", {
      payload: "",
      headers: { "content-type": "application/json" },
    });
    expect(generated.statusCode).toBe(200);
    expect(payouts.callsOf("generatePayouts")).toBe(1);
    // A route that needs fields says which, as for `{}`.
    const registration = await call("POST", "/api/v1/affiliates", {
      payload: "",
      headers: { "content-type": "application/json" },
    });
    expect(registration.statusCode).toBe(400);
    expect(Object.keys(expectBody(validationErrorSchema, registration.json()).details.fieldErrors)).toEqual(["email"]);
  });

  it("answers 413 { error } for a body over 1 MiB", async () => {
    const { call, fake } = createGateway();
    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "a@example.com", name: "x".repeat(1024 * 1024) },
    });
    expect(response.statusCode).toBe(413);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Request body is larger than 1 MiB" });
    expect(fake.callsOf("registerAffiliate")).toBe(0);
  });

  it.each(["text/plain", "application/x-www-form-urlencoded", "application/xml"])(
    "answers 415 { error } for a %s body",
    async (contentType) => {
      const { call, fake } = createGateway();
      const response = await call("POST", "/api/v1/affiliates", {
        payload: "email=a@example.com",
        headers: { "content-type": contentType },
      });
      expect(response.statusCode).toBe(415);
      expect(expectBody(errorSchema, response.json())).toEqual({
        error: "Unsupported content type; send application/json",
      });
      expect(fake.callsOf("registerAffiliate")).toBe(0);
    },
  );

  it("answers 404 { error: 'Route not found' } as JSON for an unknown route", async () => {
    const { call } = createGateway();
    for (const [method, url] of [
      ["GET", "/api/v1/nothing"],
      ["PUT", "/api/v1/affiliates"],
      ["GET", "/"],
    ] as const) {
      const response = await call(method, url);
      expect(response.statusCode, url).toBe(404);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.json()).toEqual({ error: "Route not found" });
    }
  });
});

describe("services behind the gateway", () => {
  it.each([
    ["Unavailable", Code.Unavailable],
    ["DeadlineExceeded", Code.DeadlineExceeded],
  ])("answers 503 with Retry-After when partners answers %s", async (_name, code) => {
    const { call, fake } = createGateway();
    fake.failures.set("getProgram", new ConnectError("upstream trouble at 10.0.0.7", code));
    const response = await call("GET", "/api/v1/program");
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Service temporarily unavailable" });
  });

  it("answers 503 with Retry-After when nothing listens at partners' address", async () => {
    const transport = createRpcTransport(`http://127.0.0.1:${await closedPort()}`, { timeoutMs: 2000 });
    const { call } = createGateway({ transport });
    const response = await call("GET", "/api/v1/program");
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(response.json()).toEqual({ error: "Service temporarily unavailable" });
  });

  it("answers 503 with Retry-After on every ledger-backed route when nothing listens at the ledger's address", async () => {
    const ledgerTransport = createRpcTransport(`http://127.0.0.1:${await closedPort()}`, { timeoutMs: 2000 });
    const { call, fake, product } = createGateway({ ledgerTransport });
    const jane = fake.seed(product.productId, "jane@example.com");
    const routes = [
      ["POST", "/events", { type: "click", referral_code: "jane" }],
      ["GET", "/api/v1/commissions", undefined],
      ["GET", "/api/v1/commissions/com_1", undefined],
      ["PATCH", "/api/v1/commissions/com_1", { action: "approve" }],
      ["POST", "/api/v1/refunds", { commission_id: "com_1" }],
      ["GET", "/api/v1/stats", undefined],
      ["GET", "/api/v1/stats/timeseries", undefined],
      ["GET", "/api/v1/affiliates", undefined],
      ["GET", `/api/v1/affiliates/${jane.id}`, undefined],
    ] as const;
    for (const [method, url, body] of routes) {
      const response = await call(method, url, body === undefined ? {} : { body });
      expect(response.statusCode, `${method} ${url}`).toBe(503);
      expect(response.headers["retry-after"], url).toBe("1");
      expect(expectBody(errorSchema, response.json())).toEqual({ error: "Service temporarily unavailable" });
    }
  });

  it("answers 503 with Retry-After on every payouts route when nothing listens at payouts' address", async () => {
    const payoutsTransport = createRpcTransport(`http://127.0.0.1:${await closedPort()}`, { timeoutMs: 2000 });
    const { call } = createGateway({ payoutsTransport });
    const routes = [
      ["POST", "/api/v1/payouts/generate", undefined],
      ["GET", "/api/v1/payouts", undefined],
      ["GET", "/api/v1/payouts/po_1", undefined],
      ["PATCH", "/api/v1/payouts/po_1", { action: "approve" }],
    ] as const;
    for (const [method, url, body] of routes) {
      const response = await call(method, url, body === undefined ? {} : { body });
      expect(response.statusCode, `${method} ${url}`).toBe(503);
      expect(response.headers["retry-after"], url).toBe("1");
      expect(expectBody(errorSchema, response.json())).toEqual({ error: "Service temporarily unavailable" });
    }
  });

  it("answers a change whose outcome is unknown 504 without Retry-After, saying how to find out", async () => {
    const { call, ledger } = createGateway();
    ledger.failures.set("refund", toConnectError(DomainError.outcomeUnknown("connection to the ledger lost")));
    const response = await call("POST", "/api/v1/refunds", { body: { commission_id: "com_1" } });
    expect(response.statusCode).toBe(504);
    expect(response.headers["retry-after"]).toBeUndefined();
    expect(expectBody(errorSchema, response.json()).error).toContain("same Idempotency-Key");
    expect(response.body).not.toContain("connection to the ledger");
  });

  it("answers a read whose call was lost 503 with Retry-After: a read applies nothing", async () => {
    const { call, ledger, fake } = createGateway();
    ledger.failures.set("getStats", toConnectError(DomainError.outcomeUnknown("connection to the ledger lost")));
    const read = await call("GET", "/api/v1/stats");
    expect(read.statusCode).toBe(503);
    expect(read.headers["retry-after"]).toBe("1");
    // Authentication is a read too, whatever the request it guards.
    fake.failures.set("authenticate", toConnectError(DomainError.outcomeUnknown("connection to partners lost")));
    const guarded = await call("POST", "/api/v1/refunds", { key: "sk_live_unseen_key", body: { commission_id: "c" } });
    expect(guarded.statusCode).toBe(503);
    expect(guarded.headers["retry-after"]).toBe("1");
  });

  it("answers 503 with Retry-After when the ledger answers Unavailable", async () => {
    const { call, ledger } = createGateway();
    ledger.failures.set("getStats", new ConnectError("database gone at 10.0.0.9", Code.Unavailable));
    const response = await call("GET", "/api/v1/stats");
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(response.body).not.toContain("10.0.0.9");
  });

  it("answers 500 with a generic message and logs the cause when partners fails internally", async () => {
    const { logger, lines } = capturingLogger();
    const { call, fake } = createGateway({ logger });
    fake.failures.set("getProgram", new ConnectError("null pointer in products.ts:42", Code.Internal));
    const response = await call("GET", "/api/v1/program");
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Internal server error" });
    expect(response.body).not.toContain("products.ts");
    const logged = lines().find((line) => line.msg === "unhandled error");
    expect(JSON.stringify(logged?.err)).toContain("null pointer in products.ts:42");
  });

  it("answers 500 without a stack trace when the gateway's own code throws", async () => {
    const broken: PartnershipStatsSource = {
      statsFor: async () => {
        throw new TypeError("cannot read properties of undefined");
      },
      breakdownFor: async () => {
        throw new TypeError("cannot read properties of undefined");
      },
    };
    const { call, fake, product } = createGateway({ stats: broken });
    fake.seed(product.productId, "a@example.com");
    const response = await call("GET", "/api/v1/affiliates");
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "Internal server error" });
  });
});

describe("rate limiting", () => {
  it("answers 429 with Retry-After per key once the per-minute budget is spent", async () => {
    const { call, fake } = createGateway({ rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    const limited = await call("GET", "/api/v1/program");
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(limited.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(expectBody(errorSchema, limited.json()).error).toMatch(/^Rate limit exceeded, retry in \d+ seconds?$/);
    expect(fake.callsOf("getProgram")).toBe(3);

    // Another key has its own budget.
    const other = fake.addProduct("Other");
    expect((await call("GET", "/api/v1/program", { key: other.liveKey })).statusCode).toBe(200);
  });

  it("limits requests without a key by address, before authentication", async () => {
    const { call } = createGateway({ rateLimitPerMinute: 2 });
    for (let i = 0; i < 2; i++) expect((await call("GET", "/api/v1/program", { key: null })).statusCode).toBe(401);
    expect((await call("GET", "/api/v1/program", { key: null })).statusCode).toBe(429);
  });

  it("does not limit the probes", async () => {
    const { call } = createGateway({ rateLimitPerMinute: 1 });
    for (let i = 0; i < 3; i++) expect((await call("GET", "/healthz", { key: null })).statusCode).toBe(200);
  });
});

describe("request ids and logs", () => {
  it("answers a generated x-request-id on success, error and unknown routes", async () => {
    const { call } = createGateway();
    const ids = [];
    for (const url of ["/api/v1/program", "/api/v1/nothing", "/healthz"]) {
      const id = (await call("GET", url)).headers["x-request-id"];
      expect(id, url).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
      ids.push(id);
    }
    expect(new Set(ids).size).toBe(3);
    const unauthenticated = await call("GET", "/api/v1/program", { key: null });
    expect(unauthenticated.headers["x-request-id"]).toEqual(expect.any(String));
  });

  it("keeps a sane incoming x-request-id and replaces one that is not", async () => {
    const { call } = createGateway();
    const kept = await call("GET", "/healthz", { headers: { "x-request-id": "lb-1234.abc_DEF" } });
    expect(kept.headers["x-request-id"]).toBe("lb-1234.abc_DEF");
    for (const insane of ["has space", "x".repeat(129), "semi;colon"]) {
      const replaced = await call("GET", "/healthz", { headers: { "x-request-id": insane } });
      expect(replaced.headers["x-request-id"]).not.toBe(insane);
      expect(replaced.headers["x-request-id"]).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    }
  });

  it("logs each request with its request id, and never the key or an email", async () => {
    const { logger, lines } = capturingLogger();
    const { call, product } = createGateway({ logger });
    const response = await call("POST", "/api/v1/affiliates", {
      body: { email: "secret.person@example.com" },
      headers: { "x-request-id": "req-42" },
    });
    expect(response.statusCode).toBe(201);
    const completed = lines().find((line) => line.msg === "request completed");
    expect(completed).toMatchObject({ reqId: "req-42", method: "POST", route: "/api/v1/affiliates", statusCode: 201 });
    const everything = JSON.stringify(lines());
    expect(everything).not.toContain(product.liveKey);
    expect(everything).not.toContain("secret.person");
  });
});
