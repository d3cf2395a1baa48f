import { createHmac, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * Attribution without merchant code (issue 29, contract section 17), end to end: an anonymous
 * visitor lands on a merchant's page (served here) with `?ref=CODE`, the page's only code being
 * the script tag; the script records the click once, keeps the referral across pages and puts the
 * visitor id on a Stripe Payment Link; Stripe then sends the subscription's checkout session (the
 * visitor id as client_reference_id) and its invoice, and one commission says `visitor`. The same
 * with a promotion code and no cookie says `coupon`. Headless Chromium (Debian's), the whole mesh.
 */
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// A browser's own agent: the fraud checks do not count a headless one's clicks (contract 18).
const userAgent =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let browser: Browser;
let site: Server;
let siteUrl = "";
let key = "";
let publishableKey = "";
let webhookPath = "";
const webhookSecret = `whsec_${randomBytes(12).toString("hex")}`;

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function newAffiliate() {
  const res = await api("POST", "/api/v1/affiliates", {
    email: `aff-${randomBytes(4).toString("hex")}@example.com`,
    notify: false,
  });
  expect(res.status).toBe(201);
  return { id: res.json.partnership.id as string, code: res.json.partnership.referralCode as string };
}

/** Sends a Stripe event to the receiver, signed as Stripe signs it. */
async function stripe(type: string, object: Record<string, unknown>) {
  const payload = JSON.stringify({
    id: `evt_${randomBytes(8).toString("hex")}`,
    object: "event",
    api_version: "2024-06-20",
    created: Math.floor(Date.now() / 1000),
    livemode: true,
    type,
    data: { object },
  });
  const t = Math.floor(Date.now() / 1000);
  const signature = `t=${t},v1=${createHmac("sha256", webhookSecret).update(`${t}.${payload}`).digest("hex")}`;
  const res = await fetch(mesh.gatewayUrl + webhookPath, {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": signature },
    body: payload,
  });
  expect(res.status, await res.text()).toBe(200);
}

/** A subscription bought through Stripe Checkout: the completed session, then its first invoice. */
async function subscribe(session: Record<string, unknown>, invoice: Record<string, unknown> = {}) {
  const customer = `cus_${randomBytes(6).toString("hex")}`;
  const email = `buyer-${randomBytes(4).toString("hex")}@example.com`;
  const invoiceId = `in_${randomBytes(6).toString("hex")}`;
  await stripe("checkout.session.completed", {
    id: `cs_${randomBytes(6).toString("hex")}`,
    object: "checkout.session",
    mode: "subscription",
    status: "complete",
    payment_status: "paid",
    amount_total: 4900,
    currency: "usd",
    customer,
    customer_details: { email },
    subscription: `sub_${randomBytes(6).toString("hex")}`,
    invoice: invoiceId,
    metadata: {},
    created: Math.floor(Date.now() / 1000),
    livemode: true,
    ...session,
  });
  await stripe("invoice.paid", {
    id: invoiceId,
    object: "invoice",
    amount_paid: 4900,
    amount_due: 4900,
    currency: "usd",
    customer,
    customer_email: email,
    status: "paid",
    status_transitions: { paid_at: Math.floor(Date.now() / 1000) },
    metadata: {},
    livemode: true,
    ...invoice,
  });
}

const commissionsOf = async (partnershipId: string) =>
  (await api("GET", `/api/v1/commissions?partnership_id=${partnershipId}`)).json.data as {
    level: number;
    payment_amount_cents: number;
    attribution: string | null;
  }[];

/** The merchant's pages: nothing but the script tag, a second page, and a Payment Link. */
function page(body: string) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Acme</title>
<script async src="${mesh.gatewayUrl}/js/v1/affiliate.js" data-key="${publishableKey}"></script>
</head><body>${body}</body></html>`;
}

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: {
      EVENTS_NAMESPACE: namespace.namespace,
      LOG_LEVEL: "warn",
      PAYOUT_INTERVAL_MS: "0",
      STRIPE_RECONCILE_INTERVAL_MS: "0",
    },
  });
  const product = await createProduct(mesh, "Acme Attribution");
  key = product.secret_key;
  publishableKey = product.publishable_key;

  site = createServer((request, response) => {
    const path = (request.url ?? "/").split("?", 1)[0];
    const html =
      path === "/landing"
        ? page('<h1>Acme</h1><a id="pricing" href="/pricing">Pricing</a>')
        : path === "/pricing"
          ? page(
              '<a id="buy" href="https://buy.stripe.com/test_14k5nM">Buy</a><stripe-pricing-table id="table" pricing-table-id="prctbl_1"></stripe-pricing-table>',
            )
          : path === "/nokey"
            ? `<!doctype html><html><head><script src="${mesh.gatewayUrl}/js/v1/affiliate.js"></script></head><body>ok</body></html>`
            : undefined;
    if (path === "/favicon.ico") {
      response.writeHead(204).end();
      return;
    }
    response.writeHead(html ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
    response.end(html ?? "not found");
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const address = site.address();
  siteUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

  expect(
    (await api("PATCH", "/api/v1/program", { hold_days: 0, referral_url_template: `${siteUrl}/landing?ref={code}` }))
      .status,
  ).toBe(200);
  const connected = await api("PUT", "/api/v1/integrations/stripe", { webhook_secret: webhookSecret });
  expect(connected.status).toBe(200);
  webhookPath = connected.json.data.webhook_path;
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

describe("attribution without merchant code", () => {
  it("a visit on ?ref=CODE, the script tag alone, then a Stripe checkout: one commission attributed to the visitor", async () => {
    const affiliate = await newAffiliate();
    const context = await browser.newContext({ userAgent });
    const tab = await context.newPage();
    const problems: string[] = [];
    tab.on("pageerror", (error) => problems.push(error.message));
    tab.on("console", (message) => {
      if (message.type() === "warning" || message.type() === "error") problems.push(message.text());
    });

    await tab.goto(`${siteUrl}/landing?ref=${affiliate.code}`);
    await tab.waitForFunction("window.affiliate?.visitorId() != null", undefined, { timeout: 20_000 });
    const visitorId = await tab.evaluate<string | null>("window.affiliate.visitorId()");
    expect(visitorId).toMatch(/^vis_/);

    // The cookie survives navigation: the pricing page's Payment Link and Pricing Table get the id.
    await tab.click("#pricing");
    await tab.waitForFunction(
      '(document.querySelector("#buy")?.href ?? "").includes("client_reference_id=")',
      undefined,
      { timeout: 20_000 },
    );
    expect(new URL((await tab.getAttribute("#buy", "href")) ?? "").searchParams.get("client_reference_id")).toBe(
      visitorId,
    );
    expect(await tab.getAttribute("#table", "client-reference-id")).toBe(visitorId);
    const cookie = (await context.cookies()).find((c) => c.name === "aff_ref");
    expect(JSON.parse(decodeURIComponent(cookie?.value ?? "{}"))).toMatchObject({
      code: affiliate.code,
      visitor_id: visitorId,
    });

    // The same referral again within 30 minutes is no second click.
    await tab.goto(`${siteUrl}/landing?ref=${affiliate.code}`);
    await tab.evaluate("window.affiliate.ready");
    await eventually(async () => {
      const read = await api("GET", `/api/v1/affiliates/${affiliate.id}`);
      expect(read.json.data.stats.clicks).toBe(1);
    }, 20_000);
    expect(problems).toEqual([]);
    await context.close();

    await subscribe({ client_reference_id: visitorId });
    await eventually(async () => {
      const level1 = (await commissionsOf(affiliate.id)).filter((c) => c.level === 1);
      expect(level1.map((c) => [c.payment_amount_cents, c.attribution])).toEqual([[4900, "visitor"]]);
    }, 30_000);
  });

  it("a promotion code mapped to the affiliate, and no cookie: the commission says coupon", async () => {
    const affiliate = await newAffiliate();
    const code = `SPRING${randomBytes(3).toString("hex").toUpperCase()}`;
    expect((await api("PUT", `/api/v1/affiliates/${affiliate.id}/coupons`, { codes: [code] })).status).toBe(200);
    const discount = { promotion_code: { id: `promo_${randomBytes(4).toString("hex")}`, code } };
    await subscribe({ discounts: [discount] }, { discount });
    await eventually(async () => {
      const level1 = (await commissionsOf(affiliate.id)).filter((c) => c.level === 1);
      expect(level1.map((c) => [c.payment_amount_cents, c.attribution])).toEqual([[4900, "coupon"]]);
    }, 30_000);
  });

  it("the script never throws into the page: without a key it warns once and does nothing", async () => {
    const context = await browser.newContext({ userAgent });
    const tab = await context.newPage();
    const warnings: string[] = [];
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(error.message));
    tab.on("console", (message) => {
      if (message.type() === "warning") warnings.push(message.text());
    });
    await tab.goto(`${siteUrl}/nokey?ref=ANYCODE`);
    await tab.evaluate("window.affiliate.ready");
    expect(errors).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("data-key");
    await context.close();
  });
});
