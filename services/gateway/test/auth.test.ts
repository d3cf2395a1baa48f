import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createGateway, expectBody } from "./support/harness.js";

describe("authentication on /api/v1", () => {
  it("answers 401 with the spec's text when no key is sent", async () => {
    const { call, fake } = createGateway();
    const response = await call("GET", "/api/v1/program", { key: null });
    expect(response.statusCode).toBe(401);
    expect(expectBody(errorSchema, response.json())).toEqual({ error: "Missing x-api-key header" });
    expect(fake.callsOf("authenticate")).toBe(0);
  });

  it("treats an empty key as missing", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/program", { key: "" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Missing x-api-key header" });
  });

  it("answers 401 'Invalid API key format' for a key without the sk_ or pk_ prefix, without asking partners", async () => {
    const { call, fake } = createGateway();
    const response = await call("GET", "/api/v1/affiliates", { key: "xk_live_abc" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Invalid API key format" });
    expect(fake.callsOf("authenticate")).toBe(0);
  });

  it("answers 401 'Invalid or revoked API key' when partners does not know the key", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/affiliates", { key: "sk_live_nobody" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Invalid or revoked API key" });
  });

  it("answers 403 for a test-mode key of an existing product", async () => {
    const { call, product, fake } = createGateway();
    const response = await call("GET", "/api/v1/program", { key: product.testKey });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({ error: "Test-mode keys cannot access the management API" });
    expect(fake.callsOf("getProgram")).toBe(0);
  });

  it("answers 401 for an sk_test_ key that matches no product", async () => {
    const { call } = createGateway();
    const response = await call("GET", "/api/v1/program", { key: "sk_test_unknown" });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: "Invalid or revoked API key" });
  });

  it("sends the product id the key resolved to on every RPC", async () => {
    const { call, product, fake } = createGateway();
    const other = fake.addProduct("Other");
    await call("GET", "/api/v1/program", { key: other.liveKey });
    await call("GET", "/api/v1/program");
    expect(fake.requestsOf("getProgram")).toMatchObject([
      { productId: other.productId },
      { productId: product.productId },
    ]);
  });

  it("resolves a cached key without any RPC while key rotations are followed", async () => {
    const { call, fake } = createGateway({ trusted: true });
    for (let i = 0; i < 3; i++) expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    expect(fake.callsOf("authenticate")).toBe(1);
  });

  it("re-resolves every request while key rotations are not followed", async () => {
    const { call, fake } = createGateway({ trusted: false });
    for (let i = 0; i < 3; i++) expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    expect(fake.callsOf("authenticate")).toBe(3);
  });

  it("remembers an unknown key briefly, so a flood of it reaches partners once", async () => {
    const { call, fake } = createGateway({ trusted: false });
    for (let i = 0; i < 5; i++)
      expect((await call("GET", "/api/v1/program", { key: "sk_live_bad" })).statusCode).toBe(401);
    expect(fake.callsOf("authenticate")).toBe(1);
  });

  it("shares one Authenticate call among concurrent requests with the same uncached key", async () => {
    const { call, fake } = createGateway({ trusted: true });
    const answers = await Promise.all(Array.from({ length: 5 }, () => call("GET", "/api/v1/program")));
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect(fake.callsOf("authenticate")).toBe(1);
  });

  it("answers 401 for an old key once its product's keys are evicted", async () => {
    const { call, product, fake, keyCache } = createGateway({ trusted: true });
    expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    const fresh = fake.rotateKeys(product.productId);
    // Cached: still served until the rotation event evicts it.
    expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    keyCache.evictProduct(product.productId);
    const old = await call("GET", "/api/v1/program");
    expect(old.statusCode).toBe(401);
    expect(old.json()).toEqual({ error: "Invalid or revoked API key" });
    expect((await call("GET", "/api/v1/program", { key: fresh.liveKey })).statusCode).toBe(200);
  });

  it("answers 503 with Retry-After when partners cannot authenticate, and caches nothing", async () => {
    const { call, fake } = createGateway({ trusted: true });
    fake.failures.set("authenticate", new ConnectError("connection refused", Code.Unavailable));
    const response = await call("GET", "/api/v1/program");
    expect(response.statusCode).toBe(503);
    expect(response.headers["retry-after"]).toBe("1");
    expect(response.json()).toEqual({ error: "Service temporarily unavailable" });
    fake.failures.delete("authenticate");
    expect((await call("GET", "/api/v1/program")).statusCode).toBe(200);
    expect(fake.callsOf("authenticate")).toBe(2);
  });

  it("does not ask for a key on the OpenAPI document, the docs and the probes", async () => {
    const { call } = createGateway();
    for (const url of ["/api/v1/openapi.json", "/healthz", "/readyz", "/docs"]) {
      expect((await call("GET", url, { key: null })).statusCode, url).toBe(200);
    }
  });
});
