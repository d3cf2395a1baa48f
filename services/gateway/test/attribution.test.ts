/**
 * Contract section 17 through the gateway, against the real services: publishable keys record
 * clicks and nothing else, a referral link records its click and redirects, and the clicks the
 * gateway takes itself keep a keyed hash of the address, never the address. The per-address
 * limit is checked on the in-memory gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressHasher, landingUrlOf, referrerHostOf } from "../src/routes/attribution.js";
import { createGateway } from "./support/harness.js";
import { type RealMesh, startRealMesh } from "./support/real-mesh.js";

let mesh: RealMesh;
beforeAll(async () => {
  mesh = await startRealMesh();
});
afterAll(() => mesh?.close());

let sequence = 0;
const uniqueCode = () => `R${process.pid}_${Date.now().toString(36)}_${++sequence}`;

async function productWithAffiliate(template: string | null = "https://acme.example/?ref={code}") {
  const { productId, key } = await mesh.newProduct();
  if (template) {
    expect(
      (await mesh.call(key, "PATCH", "/api/v1/program", { body: { referral_url_template: template } })).statusCode,
    ).toBe(200);
  }
  const code = uniqueCode();
  const registered = await mesh.call(key, "POST", "/api/v1/affiliates", {
    body: { email: `${code.toLowerCase()}@example.com`, referralCode: code, notify: false },
  });
  expect(registered.statusCode).toBe(201);
  const keys = await mesh.call(key, "GET", "/api/v1/keys/publishable");
  expect(keys.statusCode).toBe(200);
  return { productId, key, code, partnershipId: registered.json().partnership.id as string, pk: keys.json().data };
}

const clicksOf = (partnershipId: string) =>
  mesh.ledgerSql<
    {
      visitorId: string;
      ip: string | null;
      ipHash: string | null;
      referrerHost: string | null;
      userAgent: string | null;
    }[]
  >`
    select visitor_id, ip, ip_hash, referrer_host, user_agent from tracking_events
    where partnership_id = ${partnershipId} and event_type = 'click' order by occurred_at`;

describe("publishable keys", () => {
  it("record clicks from any origin, and every other route answers them 403 naming the key", async () => {
    const { pk, code, partnershipId } = await productWithAffiliate();
    expect(pk.publishable_key).toMatch(/^pk_live_/);
    for (const [method, url] of [
      ["GET", "/api/v1/affiliates"],
      ["POST", "/events"],
    ] as const) {
      const refused = await mesh.call(
        pk.publishable_key,
        method,
        url,
        method === "POST" ? { body: { type: "click", referral_code: code } } : {},
      );
      expect(refused.statusCode, url).toBe(403);
      expect(refused.json().error).toContain("pk_live_");
    }
    const preflight = await mesh.app.inject({
      method: "OPTIONS",
      url: "/events/click",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-headers"]).toContain("x-api-key");

    const click = await mesh.call(pk.publishable_key, "POST", "/events/click", {
      body: { referral_code: code, referrer: "https://blog.example/post?utm=1" },
      headers: { origin: "https://shop.example", "user-agent": "Mozilla/5.0 (attribution test)" },
    });
    expect(click.statusCode, click.body).toBe(201);
    expect(click.headers["access-control-allow-origin"]).toBe("*");
    expect(click.json().data).toMatchObject({ type: "click", partnership_id: partnershipId, test_mode: false });
    expect(click.json().data.visitor_id).toMatch(/^vis_/);

    const sandbox = await mesh.call(pk.test_publishable_key, "POST", "/events/click", {
      body: { referral_code: code },
    });
    expect(sandbox.statusCode).toBe(201);
    expect(sandbox.json().data.test_mode).toBe(true);

    const settings = await mesh.call(pk.publishable_key, "GET", "/program/public");
    expect(settings.json()).toEqual({
      data: { attribution_window_days: 60, referral_url_template: "https://acme.example/?ref={code}" },
    });

    const [stored] = await clicksOf(partnershipId);
    expect(stored).toMatchObject({
      visitorId: click.json().data.visitor_id,
      ip: null,
      referrerHost: "blog.example",
      userAgent: "Mozilla/5.0 (attribution test)",
    });
    expect(stored?.ipHash).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });

  it("rotate through the API: the old key stops recording clicks", async () => {
    const { key, pk, code } = await productWithAffiliate();
    const rotated = await mesh.call(key, "POST", "/api/v1/keys/publishable", { body: {} });
    expect(rotated.statusCode).toBe(201);
    expect(rotated.json().data.publishable_key).not.toBe(pk.publishable_key);
    const old = await mesh.call(pk.publishable_key, "POST", "/events/click", { body: { referral_code: code } });
    expect(old.statusCode).toBe(401);
    const fresh = await mesh.call(rotated.json().data.publishable_key, "POST", "/events/click", {
      body: { referral_code: code },
    });
    expect(fresh.statusCode).toBe(201);
  });
});

describe("GET /r/:code", () => {
  it("records one click and redirects to the program's URL with the visitor id", async () => {
    const { code, partnershipId } = await productWithAffiliate("https://acme.example/landing?ref={code}&lang=en");
    const followed = await mesh.app.inject({
      method: "GET",
      url: `/r/${code.toLowerCase()}`,
      headers: { referer: "https://news.example/item?id=1", "user-agent": "Mozilla/5.0 (link test)" },
      remoteAddress: "203.0.113.7",
    });
    expect(followed.statusCode).toBe(302);
    expect([followed.headers["cache-control"], followed.headers["referrer-policy"]]).toEqual([
      "no-store",
      "no-referrer",
    ]);
    const location = new URL(followed.headers.location as string);
    expect(location.origin + location.pathname).toBe("https://acme.example/landing");
    expect(location.searchParams.get("ref")).toBe(code);
    expect(location.searchParams.get("lang")).toBe("en");
    const visitorId = location.searchParams.get("aff_vid");
    expect(visitorId).toMatch(/^vis_/);

    const head = await mesh.app.inject({ method: "HEAD", url: `/r/${code}` });
    expect(head.statusCode).toBe(302);
    expect(head.headers.location).not.toContain("aff_vid");

    const clicks = await clicksOf(partnershipId);
    expect(clicks).toHaveLength(1);
    expect(clicks[0]).toMatchObject({
      visitorId,
      ip: null,
      referrerHost: "news.example",
      userAgent: "Mozilla/5.0 (link test)",
    });
    expect(clicks[0]?.ipHash).toBe(addressHasher("gateway-test-click-address-hash-key-0123456789")("203.0.113.7"));
  });

  it("answers 404 and records nothing for an unknown, malformed or dead code, or without a template", async () => {
    const { key, code, partnershipId } = await productWithAffiliate(null);
    for (const url of [`/r/${uniqueCode()}`, "/r/x", "/r/a%20b", `/r/${code}`]) {
      const answer = await mesh.app.inject({ method: "GET", url });
      expect(answer.statusCode, url).toBe(404);
      expect(typeof answer.json().error).toBe("string");
    }
    expect((await mesh.call(key, "DELETE", `/api/v1/affiliates/${partnershipId}`)).statusCode).toBe(200);
    expect(
      (
        await mesh.call(key, "PATCH", "/api/v1/program", {
          body: { referral_url_template: "https://a.example/?r={code}" },
        })
      ).statusCode,
    ).toBe(200);
    expect((await mesh.app.inject({ method: "GET", url: `/r/${code}` })).statusCode).toBe(404);
    expect(await clicksOf(partnershipId)).toHaveLength(0);
  });
});

describe("PUT /api/v1/affiliates/:id/coupons", () => {
  it("maps promotion codes to one affiliate of the program, and refuses a code another holds", async () => {
    const { key, partnershipId } = await productWithAffiliate();
    const put = await mesh.call(key, "PUT", `/api/v1/affiliates/${partnershipId}/coupons`, {
      body: { codes: ["SPRING20", "promo_1AbC"] },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({ data: { partnership_id: partnershipId, codes: ["promo_1abc", "spring20"] } });
    const read = await mesh.call(key, "GET", `/api/v1/affiliates/${partnershipId}/coupons`);
    expect(read.json().data.codes).toEqual(["promo_1abc", "spring20"]);

    const other = await mesh.call(key, "POST", "/api/v1/affiliates", {
      body: { email: `${uniqueCode().toLowerCase()}@example.com`, notify: false },
    });
    const otherId = other.json().partnership.id as string;
    const taken = await mesh.call(key, "PUT", `/api/v1/affiliates/${otherId}/coupons`, {
      body: { codes: ["spring20"] },
    });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error).toContain("spring20");
    expect((await mesh.call(key, "GET", `/api/v1/affiliates/${otherId}/coupons`)).json().data.codes).toEqual([]);

    const bad = await mesh.call(key, "PUT", `/api/v1/affiliates/${otherId}/coupons`, {
      body: { codes: ["no spaces"] },
    });
    expect(bad.statusCode).toBe(400);
    const unknown = await mesh.call(key, "PUT", "/api/v1/affiliates/ptn_unknown/coupons", { body: { codes: [] } });
    expect(unknown.statusCode).toBe(404);
  });
});

describe("click bursts", () => {
  it("are limited per client address, whatever the product", async () => {
    const gateway = createGateway({ clickRateLimitPerMinute: 2 });
    const follow = (address: string) =>
      gateway.app.inject({ method: "GET", url: "/r/x", remoteAddress: address }).then((r) => r.statusCode);
    expect([await follow("198.51.100.1"), await follow("198.51.100.1"), await follow("198.51.100.1")]).toEqual([
      404, 404, 429,
    ]);
    expect(await follow("198.51.100.2")).toBe(404);
    await gateway.app.close();
  });
});

describe("helpers", () => {
  it("fill the template and keep only a referrer's host", () => {
    expect(landingUrlOf("https://a.example/?ref={code}", "ADA", "vis_1")).toBe(
      "https://a.example/?ref=ADA&aff_vid=vis_1",
    );
    expect(landingUrlOf("javascript:{code}", "ADA", undefined)).toBeUndefined();
    expect(referrerHostOf("https://b.example:8443/x?y")).toBe("b.example:8443");
    expect(referrerHostOf("android-app://com.x")).toBeUndefined();
    expect(referrerHostOf(undefined)).toBeUndefined();
  });
});
