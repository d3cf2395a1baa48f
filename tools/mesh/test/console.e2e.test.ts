import { createHmac, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { repositoryRoot } from "../src/services.js";
import { createProduct, eventually, runTool, startTestMesh } from "./helpers.js";

/**
 * The merchant console in a real browser (headless Chromium, driven by playwright-core) against
 * the whole mesh, as a merchant runs a program day to day: sign in with the secret key, approve a
 * pending affiliate, generate and approve payouts, export them as PayPal's file and import the
 * result (a wrong file refused by line, the right one once), find the failing webhook endpoint and its last
 * error down to each attempt, retry a failed Stripe event, decide a commission the fraud check held; and, once the keys are rotated, be sent
 * back to sign-in with a message instead of a broken page. Nothing is loaded from anywhere but the
 * gateway and the Content-Security-Policy refuses nothing. Screenshots at 1280 and 375 px go to
 * artifacts/console/ (CONSOLE_ARTIFACTS to put them elsewhere); docs/console-*.png are copies.
 */
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const artifacts = process.env.CONSOLE_ARTIFACTS ?? join(repositoryRoot, "artifacts", "console");
const stripeSecret = `whsec_${randomBytes(12).toString("hex")}`;
const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`;

let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let browser: Browser;
let key: string;
let productId: string;

/** What the scenario made, for the assertions. */
const made = {
  pendingEmail: `${unique("applicant")}@example.com`,
  pendingId: "",
  earnerEmail: `${unique("earner")}@example.com`,
  earnerId: "",
  webhookId: "",
  refusedPort: 0,
  stripeEventId: `evt_${randomBytes(8).toString("hex")}`,
  reviewedEmail: `${unique("reviewed")}@example.com`,
  flaggedId: "",
};

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function register(email: string): Promise<string> {
  const registered = await api("POST", "/api/v1/affiliates", { email, name: email.split("@")[0], notify: false });
  expect(registered.status, JSON.stringify(registered.json)).toBe(201);
  return registered.json.partnership.id;
}

/** A port nothing listens on: a webhook sent there is refused at once, every time. */
async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Posts a Stripe event as Stripe does: signed with the connection's secret. */
async function deliverStripeEvent(path: string, event: unknown) {
  const body = JSON.stringify(event);
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac("sha256", stripeSecret).update(`${timestamp}.${body}`).digest("hex");
  const res = await fetch(mesh.gatewayUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": `t=${timestamp},v1=${signature}` },
    body,
  });
  expect(res.status, await res.text()).toBe(200);
}

/** expect.poll with room for a busy machine. */
const settled = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  const product = await createProduct(mesh, "Acme Console");
  key = product.secret_key;
  productId = product.product_id;
  expect(
    (await api("PATCH", "/api/v1/program", { hold_days: 0, payout_minimum_cents: 1000, auto_approve: false })).status,
  ).toBe(200);

  // A webhook endpoint that refuses every connection: its deliveries fail with an error to find.
  made.refusedPort = await refusedPort();
  const webhook = await api("POST", "/api/v1/webhooks", { url: `http://127.0.0.1:${made.refusedPort}/hooks` });
  expect(webhook.status).toBe(201);
  made.webhookId = webhook.json.data.id;

  // An applicant waiting for approval, and an approved affiliate with approved commissions.
  made.pendingId = await register(made.pendingEmail);
  made.earnerId = await register(made.earnerEmail);
  expect((await api("PATCH", `/api/v1/affiliates/${made.earnerId}`, { status: "active" })).status).toBe(200);
  const code = (await api("GET", `/api/v1/affiliates/${made.earnerId}`)).json.data.referral_code;
  // The earner is paid by PayPal: set in the portal's API with their own token.
  const minted = await api("POST", `/api/v1/affiliates/${made.earnerId}/tokens`, {});
  expect(minted.status).toBe(201);
  const method = await fetch(`${mesh.gatewayUrl}/affiliate/v1/payout-method`, {
    method: "PUT",
    headers: { authorization: `Bearer ${minted.json.data.token}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "paypal", email: made.earnerEmail }),
  });
  expect(method.status, await method.text()).toBe(200);
  for (const amount of [12_345, 20_000]) {
    const paid = await api("POST", "/events", {
      type: "payment",
      referral_code: code,
      amount_cents: amount,
      external_id: unique("ch"),
      customer_email: `${unique("buyer")}@example.com`,
    });
    expect(paid.status, JSON.stringify(paid.json)).toBe(201);
  }

  // A self-referred payment (the customer is the affiliate): held for review by the fraud check.
  expect((await api("PATCH", "/api/v1/program", { fraud: { self_referral: "flag" } })).status).toBe(200);
  const reviewedId = await register(made.reviewedEmail);
  expect((await api("PATCH", `/api/v1/affiliates/${reviewedId}`, { status: "active" })).status).toBe(200);
  const reviewedCode = (await api("GET", `/api/v1/affiliates/${reviewedId}`)).json.data.referral_code;
  const selfReferred = await api("POST", "/events", {
    type: "payment",
    referral_code: reviewedCode,
    amount_cents: 5000,
    external_id: unique("ch"),
    customer_email: made.reviewedEmail,
  });
  expect(selfReferred.status, JSON.stringify(selfReferred.json)).toBe(201);
  made.flaggedId = selfReferred.json.data.commissions[0].id;
  await eventually(async () => {
    const held = (await api("GET", `/api/v1/commissions/${made.flaggedId}`)).json.data;
    expect(held.hold_reason).toBe("review");
  }, 30_000);

  // A Stripe event that fails: an invoice in another currency than the program's.
  const connected = await api("PUT", "/api/v1/integrations/stripe", { webhook_secret: stripeSecret });
  expect(connected.status, JSON.stringify(connected.json)).toBe(200);
  await deliverStripeEvent(connected.json.data.webhook_path, {
    id: made.stripeEventId,
    object: "event",
    type: "invoice.paid",
    livemode: true,
    created: Math.floor(Date.now() / 1000),
    data: {
      object: {
        id: `in_${randomBytes(8).toString("hex")}`,
        object: "invoice",
        amount_paid: 4200,
        currency: "eur",
        customer: `cus_${randomBytes(6).toString("hex")}`,
        customer_email: `${unique("stripe")}@example.com`,
        status_transitions: { paid_at: Math.floor(Date.now() / 1000) },
        metadata: {},
      },
    },
  });
  await eventually(async () => {
    const events = await api("GET", "/api/v1/integrations/stripe/events?outcome=failed");
    expect(events.json.data.map((event: { id: string }) => event.id)).toContain(made.stripeEventId);
  }, 30_000);
  // The endpoint has failed at least once (registrations emit partnership.created).
  await eventually(async () => {
    const deliveries = await api("GET", `/api/v1/webhooks/${made.webhookId}/deliveries`);
    expect(deliveries.json.data.some((delivery: { attempts: number }) => delivery.attempts > 0)).toBe(true);
  }, 30_000);

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  mkdirSync(artifacts, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

/** A fresh browser context at `width`, in en-US and UTC; every request and console error is kept. */
async function openBrowser(
  width: number,
): Promise<{ context: BrowserContext; page: Page; requests: string[]; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, locale: "en-US", timezoneId: "UTC" });
  await context.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (event) =>
      console.error("CSP refused " + (event.blockedURI || "inline code") + " (" + event.effectiveDirective + ")"));`,
  });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));
  return { context, page, requests, problems };
}

async function signIn(page: Page) {
  await page.goto(`${mesh.gatewayUrl}/console`);
  await page.getByLabel("Secret key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await settled(() => page.getByRole("link", { name: "Overview" }).getAttribute("aria-current")).toBe("page");
}

/** Opens a screen from the navigation bar. */
async function open(page: Page, name: string) {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name }).click();
  await settled(() => page.getByRole("heading", { level: 1 }).first().textContent()).toBe(name);
}

/** The screen's status line once it says something. */
const statusText = (page: Page) => page.locator("main .status-line").first().textContent();

/**
 * Every control on the page can be named by a screen reader. (Runs in the page, hence written as
 * the page's code.)
 */
const namelessControlsScript = `[...document.querySelectorAll("button, input, select, textarea, a[href]")]
  .filter((element) => {
    const name = element.getAttribute("aria-label") ?? (element.labels?.[0]?.textContent || element.textContent);
    return !name?.trim();
  })
  .map((element) => element.outerHTML.slice(0, 120))`;

describe("the merchant console in a browser", () => {
  it("signs in, approves an applicant, generates, approves, exports and imports a payout, finds the failing webhook and its error, retries a failed Stripe event, reviews a flagged commission, rotates the publishable keys", async () => {
    const { context, page, requests, problems } = await openBrowser(1280);
    try {
      await signIn(page);
      // The secret key left the form and the session is in memory only.
      expect(await page.evaluate<number>("sessionStorage.length + localStorage.length + document.cookie.length")).toBe(
        0,
      );
      await settled(() => page.locator('[data-kpi="conversions"] .kpi-value').textContent()).toBe("3");
      expect(await page.locator('[data-kpi="revenue"] .kpi-value').textContent()).toBe("$373.45");

      // Affiliates: the applicant waits in the queue; approving makes them active.
      await open(page, "Affiliates");
      const queue = page.locator(".pending-queue");
      await queue.getByRole("button", { name: `Approve ${made.pendingEmail}` }).click();
      await settled(() => statusText(page)).toContain(`Approved ${made.pendingEmail}`);
      expect((await api("GET", `/api/v1/affiliates/${made.pendingId}`)).json.data.status).toBe("active");
      await settled(() => queue.getByRole("button", { name: `Approve ${made.pendingEmail}` }).count()).toBe(0);
      // Search by email finds the earner; their detail shows the figures and makes a portal link.
      await page.getByLabel("Email, referral code or external id").fill(made.earnerEmail.toUpperCase());
      await page.getByRole("button", { name: "Search" }).click();
      await settled(() => page.locator(".affiliate-results tbody tr").count()).toBe(1);
      await page.locator(`.affiliate-results [data-partnership="${made.earnerId}"] a`).click();
      await settled(() => page.locator(".facts").textContent()).toContain("$64.69 in 2 commissions");
      await page.getByRole("button", { name: "Make a portal link" }).click();
      await settled(() => page.getByLabel("Portal link (valid 24 hours)").inputValue()).toMatch(
        new RegExp(`^${mesh.gatewayUrl}/portal#token=apt_`),
      );

      // Payouts: generate, then approve the earner's payout.
      await open(page, "Payouts");
      await page.getByRole("button", { name: "Generate payouts" }).click();
      await settled(() => statusText(page)).toContain("Generated 1 payout(s)");
      const payouts = (await api("GET", `/api/v1/payouts?partnership_id=${made.earnerId}`)).json.data;
      expect(payouts).toHaveLength(1);
      const payoutId = payouts[0].id as string;
      const payoutRow = page.locator(`[data-payout="${payoutId}"]`);
      await settled(() => payoutRow.locator(".amount").last().textContent()).toBe("$64.69");
      await payoutRow.getByRole("button", { name: `Approve payout ${payoutId}` }).click();
      await settled(() => payoutRow.locator(".badge").textContent()).toBe("approved");
      expect((await api("GET", `/api/v1/payouts/${payoutId}`)).json.data.status).toBe("approved");

      // Export the approved payouts as PayPal's upload file: the earner's line, in clear.
      await page.getByLabel("File format", { exact: true }).selectOption("paypal");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download file" }).click(),
      ]);
      expect(download.suggestedFilename()).toMatch(/^payouts-paypal-\d{4}-\d{2}-\d{2}\.csv$/);
      const exported = await readFile(await download.path(), "utf8");
      expect(exported).toContain(made.earnerEmail);
      expect(exported).toContain("64.69");
      await settled(() => statusText(page)).toContain("Downloaded payouts-paypal-");

      // A result file naming a payout the program does not have: refused by line, nothing applied.
      const importFile = (name: string, text: string) =>
        page
          .getByLabel("Result file", { exact: true })
          .setInputFiles({ name, mimeType: "text/csv", buffer: Buffer.from(text) });
      const importIt = async () => {
        await page.getByRole("button", { name: "Import results" }).click();
        await page.getByRole("dialog").getByRole("button", { name: "Import results" }).click();
      };
      await importFile("wrong.csv", `payout_id,status,reference\r\n${payoutId},paid,tr_1\r\npo_unknown,paid,tr_2\r\n`);
      await importIt();
      await settled(() => statusText(page)).toContain("wrong.csv was refused and nothing was applied");
      expect(await page.locator(".refused-lines li").first().textContent()).toMatch(/^Line 3: /);
      expect((await api("GET", `/api/v1/payouts/${payoutId}`)).json.data.status).toBe("approved");

      // The right file: the payout is paid; the same file again changes nothing.
      const results = `payout_id,status,reference\r\n${payoutId},paid,tr_console_1\r\n`;
      await importFile("results.csv", results);
      await importIt();
      await settled(() => statusText(page)).toContain("Imported results.csv: 1 paid, 0 failed");
      await settled(() => payoutRow.locator(".badge").textContent()).toBe("completed");
      const paid = (await api("GET", `/api/v1/payouts/${payoutId}`)).json.data;
      expect([paid.status, paid.gateway_transfer_id]).toEqual(["completed", "tr_console_1"]);
      await importFile("results-again.csv", results);
      await importIt();
      await settled(() => statusText(page)).toContain("This file was already imported");
      await page.screenshot({ path: join(artifacts, "console-1280.png"), fullPage: true });

      // Webhooks: the endpoint says it is failing; its log shows the last error and each attempt.
      await open(page, "Webhooks");
      const endpoint = page.locator(`[data-webhook="${made.webhookId}"]`);
      await settled(() => endpoint.locator(".health").textContent()).toMatch(/^Failing since /);
      await endpoint.getByRole("link").click();
      const failed = page.locator("tr[data-delivery]").filter({ hasText: "ECONNREFUSED" }).first();
      await settled(() => failed.locator(".last-error").textContent()).toContain(
        `ECONNREFUSED 127.0.0.1:${made.refusedPort}`,
      );
      await failed.getByRole("button", { name: /^Show the attempts of delivery/ }).click();
      await settled(() => page.locator(".attempts tr.attempt").first().textContent()).toContain("ECONNREFUSED");
      expect(await page.locator(".attempts tr.attempt").first().locator("td").nth(1).textContent()).toBe("no answer");

      // Stripe: the failed event, with why; retried from the console.
      await open(page, "Stripe");
      await settled(() => page.locator(".health").first().textContent()).toBe("Connected");
      await page.getByLabel("Outcome").selectOption("failed");
      const stripeRow = page.locator(`[data-stripe-event="${made.stripeEventId}"]`);
      await settled(() => stripeRow.locator(".detail").textContent()).toContain("EUR");
      await stripeRow.getByRole("button", { name: `Retry Stripe event ${made.stripeEventId}` }).click();
      await settled(() => statusText(page)).toContain(`Retried ${made.stripeEventId}: failed`);

      // Commissions: the self-referred one waits in the review queue with its signal; approve it.
      await open(page, "Commissions");
      const flagged = page.locator(`[data-review="${made.flaggedId}"]`);
      await settled(() => flagged.locator(".flag").first().textContent()).toMatch(/^self referral: /);
      await flagged.getByLabel(`Note on commission ${made.flaggedId}`).fill("Known customer, checked by hand");
      await flagged.getByRole("button", { name: `Approve flagged commission ${made.flaggedId}` }).click();
      await settled(() => statusText(page)).toBe("Approved $10.00 after review.");
      const reviewed = (await api("GET", `/api/v1/commissions/${made.flaggedId}`)).json.data;
      expect([reviewed.review?.decision, reviewed.review?.note]).toEqual([
        "approve",
        "Known customer, checked by hand",
      ]);
      await settled(() => page.locator(`[data-review="${made.flaggedId}"]`).count()).toBe(0);

      // Settings: the publishable keys, rotated after one confirmation.
      await open(page, "Settings");
      const liveKey = page.locator(".publishable-keys code").first();
      await settled(() => liveKey.textContent()).toMatch(/^pk_live_/);
      const before = await liveKey.textContent();
      await page.getByRole("button", { name: "Rotate publishable keys" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Rotate publishable keys" }).click();
      await settled(() => statusText(page)).toBe("New publishable keys issued; the old pair no longer records clicks.");
      const after = await liveKey.textContent();
      expect(after).toMatch(/^pk_live_/);
      expect(after).not.toBe(before);

      expect(await page.evaluate<string[]>(namelessControlsScript)).toEqual([]);
      expect(requests.filter((url) => !url.startsWith(`${mesh.gatewayUrl}/`))).toEqual([]);
      expect(problems.filter((problem) => !/status of 40\d/.test(problem))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("fits a 375 px screen", async () => {
    const { context, page, problems } = await openBrowser(375);
    try {
      await signIn(page);
      await open(page, "Affiliates");
      await settled(() => page.locator(".affiliate-results tbody tr").count()).toBeGreaterThan(1);
      // Nothing wider than the screen: tables scroll inside their own box.
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375);
      await page.screenshot({ path: join(artifacts, "console-375.png"), fullPage: true });
      await open(page, "Payouts");
      await settled(() => page.locator("tr[data-payout]").count()).toBeGreaterThan(0);
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("a session ended by a key rotation returns to sign-in with a message; the old key is refused there", async () => {
    const { context, page } = await openBrowser(1280);
    try {
      await signIn(page);
      const rotated = await runTool("admin", ["keys", "rotate", "--product", productId], {
        PARTNERS_URL: mesh.urls.partners,
      });
      expect(rotated.code, rotated.stderr).toBe(0);
      // The next screen's first call meets the ended session.
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Affiliates" }).click();
      await settled(() => page.getByRole("alert").first().textContent()).toContain("Your console session has ended");
      await page.getByLabel("Secret key").fill(key);
      await page.getByRole("button", { name: "Sign in" }).click();
      await settled(() => page.getByRole("alert").first().textContent()).toContain("This key was not accepted");
      key = JSON.parse(rotated.stdout).secret_key;
    } finally {
      await context.close();
    }
  });
  it("a console session is a bearer on the management API only, opens no other session, and ends at sign-out", async () => {
    const opened = await api("POST", "/api/v1/console/sessions", { ttl_seconds: 600 });
    expect(opened.status, JSON.stringify(opened.json)).toBe(201);
    const token: string = opened.json.data.token;
    expect(token).toMatch(/^cst_/);
    const withSession = (method: string, path: string, body?: unknown) =>
      fetch(mesh.gatewayUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await withSession("GET", "/api/v1/program")).status).toBe(200);
    expect((await withSession("POST", "/api/v1/console/sessions", {})).status).toBe(403);
    expect((await withSession("POST", "/events", { type: "click", referral_code: "NOPE" })).status).toBe(401);
    expect((await withSession("DELETE", "/api/v1/console/sessions/current")).status).toBe(204);
    const ended = await withSession("GET", "/api/v1/program");
    expect([ended.status, await ended.json()]).toEqual([
      401,
      { error: "Invalid or expired console session: sign in again" },
    ]);
  });
});
