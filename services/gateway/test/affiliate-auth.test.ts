/**
 * The affiliate API's token check and budget (contract section 14), through the gateway with the
 * fake partners: expiry and status are partners' to decide, the gateway holds a token no longer
 * than it lives, and each token has its own rate budget, as each API key has.
 */
import { describe, expect, it } from "vitest";
import { createGateway } from "./support/harness.js";

const bearer = (token: string) => ({ key: null, headers: { authorization: `Bearer ${token}` } });

describe("affiliate tokens at the gateway", () => {
  it("an expired token is refused although the gateway cached it", async () => {
    const gateway = createGateway();
    const { partnershipId } = gateway.affiliate();
    const productId = gateway.fake.partnerships.get(partnershipId)?.productId ?? "";
    // Long enough that the first call lands inside it on a loaded machine; then wait out the rest.
    const lifetimeMs = 3000;
    const expiresAt = Date.now() + lifetimeMs;
    const token = gateway.fake.mintToken(productId, partnershipId, lifetimeMs);
    expect((await gateway.call("GET", "/affiliate/v1/me", bearer(token))).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 100));
    const expired = await gateway.call("GET", "/affiliate/v1/me", bearer(token));
    expect(expired.statusCode).toBe(401);
    expect(expired.json()).toEqual({ error: "Invalid or expired affiliate token" });
  });

  it("each token has its own budget: 429 with Retry-After past it", async () => {
    const gateway = createGateway({ rateLimitPerMinute: 2 });
    const { partnershipId, token } = gateway.affiliate();
    const productId = gateway.fake.partnerships.get(partnershipId)?.productId ?? "";
    for (let i = 0; i < 2; i++) expect((await gateway.call("GET", "/affiliate/v1/me")).statusCode).toBe(200);
    const limited = await gateway.call("GET", "/affiliate/v1/me", bearer(token));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toMatch(/^\d+$/);
    expect(limited.headers["access-control-allow-origin"]).toBe("*");
    const another = gateway.fake.mintToken(productId, partnershipId);
    expect((await gateway.call("GET", "/affiliate/v1/me", bearer(another))).statusCode).toBe(200);
  });

  it("sign-in is budgeted per client address, whatever bearer a request carries", async () => {
    const gateway = createGateway({ rateLimitPerMinute: 2 });
    const body = { product_id: gateway.product.productId, email: "x@example.com" };
    const statuses: number[] = [];
    for (const token of ["apt_1", "apt_2", "apt_3"]) {
      statuses.push((await gateway.call("POST", "/affiliate/v1/login", { ...bearer(token), body })).statusCode);
    }
    expect(statuses).toEqual([202, 202, 429]);
  });

  describe("the client's address behind a proxy (TRUST_PROXY)", () => {
    const signIn = (gateway: ReturnType<typeof createGateway>, forwardedFor: string) =>
      gateway.call("POST", "/affiliate/v1/login", {
        key: null,
        headers: { "x-forwarded-for": forwardedFor },
        body: { product_id: gateway.product.productId, email: "x@example.com" },
      });

    it("counts each client behind a trusted proxy on its own", async () => {
      // Requests injected here come from 127.0.0.1: the proxy, as an Ingress controller would be.
      const gateway = createGateway({ rateLimitPerMinute: 1, trustProxy: ["127.0.0.1"] });
      expect((await signIn(gateway, "203.0.113.1")).statusCode).toBe(202);
      expect((await signIn(gateway, "203.0.113.2")).statusCode).toBe(202);
      expect((await signIn(gateway, "203.0.113.1")).statusCode).toBe(429);
    });

    it("believes no X-Forwarded-For by default: a client cannot pick a fresh budget", async () => {
      const gateway = createGateway({ rateLimitPerMinute: 1 });
      expect((await signIn(gateway, "203.0.113.1")).statusCode).toBe(202);
      expect((await signIn(gateway, "203.0.113.2")).statusCode).toBe(429);
    });
  });
});
