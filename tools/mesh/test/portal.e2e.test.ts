import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { repositoryRoot } from "../src/services.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";
import { MailSink } from "./mail-sink.js";

/**
 * The affiliate portal in a real browser (headless Chromium, driven by playwright-core) against
 * the whole mesh: an affiliate with clicks, payments, a paid payout, a refund of a paid
 * commission and the payout that claws it back. The page must show the figures the affiliate
 * API gives, sign in by token and by an emailed code (read from a local SMTP server), copy the
 * link, switch period, open a payout down to its clawback line and sign out; and load nothing
 * from anywhere but the gateway. Screenshots at 375 and 1280 px go to artifacts/portal/
 * (PORTAL_ARTIFACTS to put them elsewhere); docs/portal-*.png are copies of them.
 */
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const artifacts = process.env.PORTAL_ARTIFACTS ?? join(repositoryRoot, "artifacts", "portal");

let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let mail: MailSink;
let browser: Browser;
let key: string;
let productId: string;

/** What the scenario made, for the assertions. */
const made = {
  affiliateEmail: `aff-${randomBytes(4).toString("hex")}@example.com`,
  partnershipId: "",
  referralCode: "",
  refundedCommissionId: "",
  pendingCommissionId: "",
  paidPayoutId: "",
  clawbackPayoutId: "",
  refundReason: "Customer cancelled in the first week",
};

async function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { "x-api-key": key },
) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const affiliateApi = (token: string, path: string) => api("GET", path, undefined, { authorization: `Bearer ${token}` });

async function track(event: Record<string, unknown>) {
  const res = await api("POST", "/events", { referral_code: made.referralCode, ...event });
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return res.json.data;
}

async function pay(amountCents: number, customerEmail: string): Promise<string> {
  const data = await track({
    type: "payment",
    amount_cents: amountCents,
    customer_email: customerEmail,
    external_id: `ch_${randomBytes(6).toString("hex")}`,
  });
  return data.commissions[0].id as string;
}

async function generatePayout(): Promise<{ id: string; amount_cents: number; adjustment_cents: number }> {
  const generated = await api("POST", "/api/v1/payouts/generate", {});
  expect(generated.status).toBe(200);
  const payout = generated.json.data.find((p: { partnership_id: string }) => p.partnership_id === made.partnershipId);
  expect(payout).toBeDefined();
  return payout;
}

async function mintToken(): Promise<string> {
  const minted = await api("POST", `/api/v1/affiliates/${made.partnershipId}/tokens`, {});
  expect(minted.status).toBe(201);
  return minted.json.data.token;
}

/**
 * expect.poll with room for a busy machine: the page shows what it fetched once it has it, and
 * vitest's default second is not always enough for a mesh on two cores.
 */
const settled = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 15_000, interval: 100 });

/** Cents as the portal writes them in en-US, computed on integers. */
function dollars(cents: number): string {
  const magnitude = Math.abs(cents);
  const units = new Intl.NumberFormat("en-US").format(Math.trunc(magnitude / 100));
  return `${cents < 0 ? "-" : ""}$${units}.${String(magnitude % 100).padStart(2, "0")}`;
}

beforeAll(async () => {
  mail = new MailSink();
  const smtpUrl = await mail.start();
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0", SMTP_URL: smtpUrl },
  });
  const product = await createProduct(mesh, "Acme Analytics");
  key = product.secret_key;
  productId = product.product_id;
  expect(
    (
      await api("PATCH", "/api/v1/program", {
        hold_days: 0,
        payout_minimum_cents: 1000,
        referral_url_template: "https://acme.example/?via={code}",
      })
    ).status,
  ).toBe(200);

  const registered = await api("POST", "/api/v1/affiliates", {
    email: made.affiliateEmail,
    name: "Robin Reviewer",
    notify: false,
  });
  expect(registered.status).toBe(201);
  made.partnershipId = registered.json.partnership.id;
  made.referralCode = registered.json.partnership.referralCode;

  // Traffic now and in the previous 30 days, so the cards have a change to show.
  for (let i = 0; i < 3; i++) await track({ type: "click" });
  await track({ type: "click", occurred_at: new Date(Date.now() - 35 * 86_400_000).toISOString() });
  await track({ type: "signup", customer_email: "alice@example.com" });

  // A commission paid out, then refunded: its clawback nets into the next payout.
  made.refundedCommissionId = await pay(10_000, "alice@example.com");
  const paid = await generatePayout();
  made.paidPayoutId = paid.id;
  expect((await api("PATCH", `/api/v1/payouts/${paid.id}`, { action: "approve" })).status).toBe(200);
  expect((await api("PATCH", `/api/v1/payouts/${paid.id}`, { action: "mark_paid", reference: "tr_1" })).status).toBe(
    200,
  );
  await eventually(async () =>
    expect((await api("GET", `/api/v1/commissions/${made.refundedCommissionId}`)).json.data.status).toBe("paid"),
  );
  const refund = await api("POST", "/api/v1/refunds", {
    commission_id: made.refundedCommissionId,
    reason: made.refundReason,
  });
  expect(refund.status, JSON.stringify(refund.json)).toBe(200);
  await pay(25_000, "bob@example.com");
  const clawback = await eventually(async () => {
    const payout = await generatePayout();
    expect(payout.adjustment_cents).toBeLessThan(0);
    return payout;
  }, 20_000);
  made.clawbackPayoutId = clawback.id;

  // A commission still in its hold period.
  expect((await api("PATCH", "/api/v1/program", { hold_days: 30 })).status).toBe(200);
  made.pendingCommissionId = await pay(5_000, "carol@example.com");

  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
  mkdirSync(artifacts, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await mesh?.stop();
  await mail?.close();
  await namespace?.cleanup();
  await database?.drop();
});

/**
 * A fresh browser context (its own sessionStorage) at `width`, in en-US and UTC, allowed to use
 * the clipboard; every request it makes and every console error are kept for the assertions.
 */
async function openBrowser(width: number): Promise<{
  context: BrowserContext;
  page: Page;
  requests: string[];
  problems: string[];
}> {
  const context = await browser.newContext({
    viewport: { width, height: 900 },
    locale: "en-US",
    timezoneId: "UTC",
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: mesh.gatewayUrl });
  // A refusal by the Content-Security-Policy becomes a console error, so it lands in `problems`
  // named as such, whether or not the browser also logs it on its own.
  // (Runs in the page, hence written as the page's code.)
  await context.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (event) =>
      console.error("CSP refused " + (event.blockedURI || "inline code") + " (" + event.effectiveDirective + ")"));`,
  });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    // An affiliate with no payout method yet is answered 404 (the API's "nothing set"), which the
    // browser logs for any 4xx fetch: expected on every fresh dashboard, so not a problem.
    const noPayoutMethodYet =
      message.text().startsWith("Failed to load resource") &&
      message.location().url.endsWith("/affiliate/v1/payout-method");
    if (!noPayoutMethodYet) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));
  return { context, page, requests, problems };
}

/**
 * Every control on the page can be named by a screen reader: an aria-label, an element it is
 * labelled by, a <label>, or its own text. (Runs in the page, hence written as the page's code.)
 */
const namelessControlsScript = `[...document.querySelectorAll("button, input, select, textarea, a[href], [role=button]")]
  .filter((element) => {
    const labelledBy = element.getAttribute("aria-labelledby");
    const name =
      element.getAttribute("aria-label") ??
      (labelledBy ? document.getElementById(labelledBy)?.textContent : null) ??
      (element.labels?.[0]?.textContent || element.textContent);
    return !name?.trim();
  })
  .map((element) => element.outerHTML.slice(0, 120))`;

const namelessControls = (page: Page) => page.evaluate<string[]>(namelessControlsScript);

/** An opened payout's adjustment rows, with what its panel says, for a failure to show. */
async function payoutLines(payout: Locator): Promise<{ adjustments: number; panel: string | null }> {
  return {
    adjustments: await payout.locator("tr.adjustment").count(),
    panel: await payout.locator(".payout-lines").textContent(),
  };
}

describe("the affiliate portal in a browser", () => {
  it("signs in by token, shows the API's figures, copies the link, switches period, opens a payout to its clawback line, signs out", async () => {
    const token = await mintToken();
    const { context, page, requests, problems } = await openBrowser(1280);
    try {
      await page.goto(`${mesh.gatewayUrl}/portal#token=${token}`);

      // The token leaves the address bar at once.
      await settled(() => page.evaluate<string>("location.hash")).toBe("");
      const me = (await affiliateApi(token, "/affiliate/v1/me")).json.data;
      const link = page.getByRole("textbox", { name: "Your referral link" });
      await settled(() => link.inputValue()).toBe(me.referral_link);
      expect(me.referral_link).toBe(`https://acme.example/?via=${made.referralCode}`);
      await settled(() => page.locator(".program").textContent()).toBe("Acme Analytics");

      // The cards are the API's figures for 30 days, each against the previous 30 days.
      const stats30 = (await affiliateApi(token, "/affiliate/v1/stats?period=30d")).json.data;
      expect(stats30).toMatchObject({ clicks: 3, signups: 1, conversions: 3, revenue_cents: 40_000 });
      expect(stats30.previous_period.clicks).toBe(1);
      const kpi = (name: string) => page.locator(`[data-kpi="${name}"] .kpi-value`);
      const change = (name: string) => page.locator(`[data-kpi="${name}"] .kpi-change`);
      await settled(() => kpi("clicks").textContent()).toBe("3");
      expect(await change("clicks").textContent()).toBe("+200% vs previous 30 days");
      expect(await kpi("conversions").textContent()).toBe(String(stats30.conversions));
      expect(await kpi("revenue").textContent()).toBe(dollars(stats30.revenue_cents));
      expect(await kpi("earnings").textContent()).toBe(dollars(stats30.commissions_cents));
      expect(await change("earnings").textContent()).toBe("new vs previous 30 days");
      expect(await kpi("conversion_rate").textContent()).toBe("100%");
      expect(await page.locator(".chart-svg rect.bar").count()).toBe(30);

      // Commissions with their status, the refund's reason, the masked customer and the hold.
      const commissions = (await affiliateApi(token, "/affiliate/v1/commissions")).json.data;
      const refunded = page.locator(`[data-commission="${made.refundedCommissionId}"]`);
      await settled(() => refunded.locator(".badge").textContent()).toBe("Refunded");
      expect(await refunded.textContent()).toContain(`Refunded: ${made.refundReason}`);
      const refundedFromApi = commissions.find((c: { id: string }) => c.id === made.refundedCommissionId);
      expect(refundedFromApi.customer).toBe("a***@example.com");
      expect(await refunded.textContent()).toContain("Customer a***@example.com");
      const pending = page.locator(`[data-commission="${made.pendingCommissionId}"]`);
      expect(await pending.locator(".badge").textContent()).toBe("Pending");
      expect(await pending.textContent()).toMatch(/Held until \w{3} \d{1,2}, \d{4}/);
      expect(await page.locator("li.commission").count()).toBe(commissions.length);

      // Copy the link: the clipboard holds it, and the page says so.
      await page.getByRole("button", { name: "Copy your referral link" }).click();
      await settled(() => page.locator(".copy-status").textContent()).toBe(
        "Copied your referral link to the clipboard.",
      );
      expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(me.referral_link);

      // Open the payout that claws back the refunded commission: its lines, the clawback among them.
      const detail = (await affiliateApi(token, `/affiliate/v1/payouts/${made.clawbackPayoutId}`)).json.data;
      const payout = page.locator(`[data-payout="${made.clawbackPayoutId}"]`);
      const toggle = payout.getByRole("button");
      expect(await toggle.getAttribute("aria-expanded")).toBe("false");
      await toggle.click();
      expect(await toggle.getAttribute("aria-expanded")).toBe("true");
      const clawbackLine = payout.locator("tr.adjustment");
      await settled(() => payoutLines(payout)).toMatchObject({ adjustments: 1 });
      const adjustment = detail.lines.find((line: { kind: string }) => line.kind === "adjustment");
      expect(adjustment.description).toContain(made.refundedCommissionId);
      expect(await clawbackLine.locator("td").first().textContent()).toBe(`Clawback ${adjustment.description}`);
      expect(await clawbackLine.locator("td.amount").textContent()).toBe(dollars(adjustment.amount_cents));
      expect(await payout.locator("tr.line").count()).toBe(detail.lines.length);
      expect(await payout.locator("tfoot td.amount").textContent()).toBe(dollars(detail.amount_cents));
      await page.screenshot({ path: join(artifacts, "portal-1280.png"), fullPage: true });

      // Switch to 7 days: the cards and the chart follow, against the previous 7 days.
      const stats7 = (await affiliateApi(token, "/affiliate/v1/stats?period=7d")).json.data;
      const sevenDays = page.getByRole("group", { name: "Period" }).getByRole("button", { name: "7 days" });
      await Promise.all([
        page.waitForResponse((response) => response.url().endsWith("/affiliate/v1/stats?period=7d")),
        sevenDays.click(),
      ]);
      await settled(() => change("clicks").textContent()).toBe("new vs previous 7 days");
      expect(await sevenDays.getAttribute("aria-pressed")).toBe("true");
      expect(await kpi("clicks").textContent()).toBe(String(stats7.clicks));
      expect(await kpi("earnings").textContent()).toBe(dollars(stats7.commissions_cents));
      expect(await page.locator(".chart-svg rect.bar").count()).toBe(7);

      // Nothing nameless, nothing from elsewhere, nothing the policy refused.
      expect(await namelessControls(page)).toEqual([]);
      expect(requests.filter((url) => !url.startsWith(`${mesh.gatewayUrl}/`))).toEqual([]);
      expect(problems).toEqual([]);

      // Sign out: back to the form, the token gone from the tab, and a reload does not bring it back.
      await page.getByRole("button", { name: "Sign out" }).click();
      await settled(() => page.getByRole("button", { name: "Email me a sign-in link" }).count()).toBe(1);
      expect(await page.getByRole("status").first().textContent()).toContain("You are signed out");
      expect(await page.evaluate<number>("sessionStorage.length")).toBe(0);
      await page.reload();
      await settled(() => page.getByRole("button", { name: "Email me a sign-in link" }).count()).toBe(1);
    } finally {
      await context.close();
    }
  });

  it("lives under a policy that refuses anything from elsewhere, and a refusal fails these tests", async () => {
    const { context, page, problems } = await openBrowser(1280);
    try {
      await page.goto(`${mesh.gatewayUrl}/portal`);
      await settled(() => page.getByRole("button", { name: "Email me a sign-in link" }).count()).toBe(1);
      expect(problems).toEqual([]);
      // What a compromised dependency or an injected tag would try: the policy refuses it, and the
      // refusal reaches `problems`, which every other test here asserts empty.
      await page.evaluate(
        `document.body.append(Object.assign(document.createElement("img"), { src: "https://tracker.example/pixel.gif" }))`,
      );
      await settled(async () =>
        problems.filter((problem) => problem.startsWith("CSP refused https://tracker.example/")),
      ).toHaveLength(1);
    } finally {
      await context.close();
    }
  });

  it("fits a 375 px screen", async () => {
    const token = await mintToken();
    const { context, page, problems } = await openBrowser(375);
    try {
      await page.goto(`${mesh.gatewayUrl}/portal#token=${token}`);
      // Every section loaded first, as a reader would see it: a click while the sections above
      // are still filling in would measure a layout that is about to move.
      await settled(() => page.locator('[data-kpi="clicks"] .kpi-value').textContent()).toBe("3");
      await settled(() => page.locator("li.commission").count()).toBeGreaterThan(0);
      const payout = page.locator(`[data-payout="${made.clawbackPayoutId}"]`);
      await payout.getByRole("button").click();
      await settled(() => payoutLines(payout)).toMatchObject({ adjustments: 1 });
      // Nothing wider than the screen: no sideways scrolling.
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(375);
      await page.screenshot({ path: join(artifacts, "portal-375.png"), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("signs in by the code of an emailed link, which works once", async () => {
    const { context, page, problems } = await openBrowser(1280);
    try {
      await page.goto(`${mesh.gatewayUrl}/portal#product=${productId}`);
      expect(await page.getByLabel("Program id").inputValue()).toBe(productId);
      await page.getByLabel("Your email").fill(made.affiliateEmail);
      await page.getByRole("button", { name: "Email me a sign-in link" }).click();
      await settled(() => page.locator(".notice").textContent()).toContain("Check your email.");
      expect(await namelessControls(page)).toEqual([]);

      // The email's link points at this portal (npm start sets PORTAL_URL to its own /portal).
      const link = await eventually(async () => {
        const links = mail
          .to(made.affiliateEmail)
          .flatMap((received) => /(\S+#code=[\w.~%-]+)/.exec(received.text)?.[1] ?? []);
        expect(links).toHaveLength(1);
        return links[0] as string;
      }, 20_000);
      expect(link.startsWith(`${mesh.gatewayUrl}/portal#code=`)).toBe(true);

      await page.goto(link);
      await settled(() => page.getByRole("textbox", { name: "Your referral link" }).inputValue()).toBe(
        `https://acme.example/?via=${made.referralCode}`,
      );
      await settled(() => page.locator('[data-kpi="clicks"] .kpi-value').textContent()).toBe("3");
      const session = await page.evaluate<string | null>(`sessionStorage.getItem("affiliate-portal.session")`);
      expect(JSON.parse(session ?? "{}")).toMatchObject({ token: expect.stringMatching(/^apt_/) });
      expect(await page.evaluate<string>("document.cookie")).toBe("");

      // The same link again: refused, and the page says what to do.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.goto(link);
      await settled(() => page.getByRole("alert").textContent()).toBe(
        "This sign-in link has expired or was already used; ask for a new one below.",
      );
      expect(problems.filter((text) => !/401/.test(text))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("writes an int64 amount beyond 2^53 exactly, shows a hold reason, waits out a busy service, and says what to do when a section fails or is empty", async () => {
    const token = await mintToken();
    const { context, page } = await openBrowser(1280);
    try {
      // Answers the mesh cannot give yet (the ledger records no hold reasons, and no payout is
      // that large), written as the API writes them: an int64 sum as a bare JSON integer.
      const held = `{"data":[{"id":"com_held","status":"pending","level":1,"amount_cents":4500,"payment_amount_cents":45000,"hold_until":"2030-01-31T00:00:00.000Z","hold_reason":"Payment disputed by the customer","created_at":"2030-01-01T00:00:00.000Z","payout_id":null,"rule":null,"refund_reason":null,"customer":"d***@example.com"}],"pagination":{"next_cursor":null,"has_more":false}}`;
      const large = `{"data":[{"id":"po_large","status":"completed","amount_cents":9007199254740993,"adjustment_cents":-7,"commission_count":1,"created_at":"2030-01-01T00:00:00.000Z","approved_at":"2030-01-01T00:00:00.000Z","paid_at":"2030-01-02T00:00:00.000Z","lines":[{"kind":"commission","id":"com_large","amount_cents":9007199254741000,"description":"Commission com_large"},{"kind":"adjustment","id":"adj_large","amount_cents":-7,"description":"Clawback of com_refunded"}]}],"pagination":{"next_cursor":null,"has_more":false}}`;
      const busy = {
        status: 503,
        headers: { "retry-after": "1" },
        contentType: "application/json",
        body: '{"error":"Service unavailable"}',
      };
      await page.route("**/affiliate/v1/commissions?*", (route) =>
        route.fulfill({ status: 200, contentType: "application/json", body: held }),
      );
      // The payouts' read meets a busy service twice: the client waits out each 503 for its
      // Retry-After and asks again (the contract's retries), so the page never shows a failure.
      let payoutReads = 0;
      await page.route("**/affiliate/v1/payouts?*", (route) =>
        ++payoutReads < 3
          ? route.fulfill(busy)
          : route.fulfill({ status: 200, contentType: "application/json", body: large }),
      );
      await page.goto(`${mesh.gatewayUrl}/portal#token=${token}`);

      const commission = page.locator('[data-commission="com_held"]');
      await settled(() => commission.locator(".amount").textContent()).toBe("$45.00");
      expect(await commission.textContent()).toContain("On a $450.00 payment");
      expect(await commission.textContent()).toContain("On hold: Payment disputed by the customer");
      expect(await commission.textContent()).toContain("Held until Jan 31, 2030");

      const payouts = page.getByRole("region", { name: "Payouts" });
      const largePayout = payouts.locator('[data-payout="po_large"]');
      await settled(() => largePayout.locator(".amount").first().textContent()).toBe("$90,071,992,547,409.93");
      expect(payoutReads).toBe(3);
      expect(await payouts.getByRole("alert").count()).toBe(0);
      await largePayout.getByRole("button").click();
      expect(await largePayout.locator('[data-line="com_large"] td.amount').textContent()).toBe(
        "$90,071,992,547,410.00",
      );
      expect(await largePayout.locator("tfoot td.amount").textContent()).toBe("$90,071,992,547,409.93");

      // Still busy after the client's three attempts: the section says so, and its "Try again"
      // goes through.
      await page.unroute("**/affiliate/v1/payouts?*");
      let busyAnswers = 3;
      await page.route("**/affiliate/v1/payouts?*", (route) =>
        busyAnswers-- > 0 ? route.fulfill(busy) : route.continue(),
      );
      await page.reload();
      await settled(() => payouts.getByRole("alert").textContent()).toContain(
        "The service is briefly unavailable. Try again in a moment.",
      );
      expect(busyAnswers).toBe(0);
      await payouts.getByRole("button", { name: "Try again" }).click();
      await settled(() => payouts.locator(`[data-payout="${made.clawbackPayoutId}"]`).count()).toBe(1);
      expect(await payouts.getByRole("alert").count()).toBe(0);

      // Nothing to list: each list says what will fill it.
      await page.unrouteAll();
      const empty = '{"data":[],"pagination":{"next_cursor":null,"has_more":false}}';
      for (const list of ["commissions", "payouts"]) {
        await page.route(`**/affiliate/v1/${list}?*`, (route) =>
          route.fulfill({ status: 200, contentType: "application/json", body: empty }),
        );
      }
      await page.reload();
      await settled(() => page.getByRole("region", { name: "Commissions" }).locator(".empty").textContent()).toBe(
        "No commissions yet. Each payment from a customer you referred earns one, and it appears here as soon as it is recorded.",
      );
      expect(await payouts.locator(".empty").textContent()).toBe(
        "No payouts yet. Commissions are paid out once their hold has passed and they add up to at least $10.00.",
      );
    } finally {
      await context.close();
    }
  });

  it("sends a signed-in affiliate back to sign-in with what to do when the token stops working", async () => {
    const token = await mintToken();
    const { context, page } = await openBrowser(1280);
    try {
      await page.goto(`${mesh.gatewayUrl}/portal#token=${token}`);
      await settled(() => page.locator('[data-kpi="clicks"] .kpi-value').textContent()).toBe("3");
      expect((await api("DELETE", `/api/v1/affiliates/${made.partnershipId}/tokens`)).status).toBe(200);
      // Revocation reaches the gateway within 2 s; the next read is refused.
      await eventually(async () => expect((await affiliateApi(token, "/affiliate/v1/me")).status).toBe(401), 5000);
      await page.getByRole("button", { name: "90 days" }).click();
      await settled(() => page.getByRole("alert").textContent()).toBe(
        "Your sign-in link has expired; ask for a new one.",
      );
      expect(await page.getByLabel("Program id").count()).toBe(1);
      expect(await page.evaluate<number>("sessionStorage.length")).toBe(0);
    } finally {
      await context.close();
    }
  });
});
