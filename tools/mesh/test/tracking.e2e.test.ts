import { invariantViolations } from "@affiliate/ledger/store/invariants";
import type { Queryable } from "@affiliate/platform";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, startTestMesh } from "./helpers.js";

/**
 * Tracking at volume through the whole mesh: POST /events/batch, and concurrent single POST
 * /events that the gateway coalesces into TrackBatch calls, against the real ledger, Postgres
 * and NATS. After them, the ledger's invariants hold and its rollups equal its events.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let ledgerSql: postgres.Sql;
let key: string;
let testKey: string;

async function api(method: string, path: string, body?: unknown, apiKey = key) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers, checked field by field below
  return { status: res.status, json: (await res.json()) as any };
}

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  ({ secret_key: key, test_secret_key: testKey } = await createProduct(mesh, "Tracking e2e"));
  expect((await api("PATCH", "/api/v1/program", { hold_days: 0 })).status).toBe(200);
  ledgerSql = postgres(database.url, { connection: { search_path: "ledger" }, max: 2 });
});

afterAll(async () => {
  await ledgerSql?.end();
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

/** An active affiliate with a sponsor, so each attributed payment makes two commissions. */
async function sponsoredAffiliate(tag: string) {
  const sponsor = await api("POST", "/api/v1/affiliates", { email: `sponsor-${tag}@example.com`, notify: false });
  const affiliate = await api("POST", "/api/v1/affiliates", {
    email: `affiliate-${tag}@example.com`,
    sponsorReferralCode: sponsor.json.partnership.referralCode,
    notify: false,
  });
  expect(affiliate.status).toBe(201);
  return { id: affiliate.json.partnership.id as string, code: affiliate.json.partnership.referralCode as string };
}

describe("POST /events/batch through the mesh", () => {
  it("answers each event as POST /events answers it alone: recorded, invalid, replayed, unknown code", async () => {
    const aff = await sponsoredAffiliate("batch");
    const seen = await api("POST", "/events", {
      type: "payment",
      referral_code: aff.code,
      amount_cents: 4000,
      external_id: "ch_seen",
    });
    expect(seen.status).toBe(201);
    const events = [
      { type: "click", referral_code: aff.code, visitor_id: "v-batch" },
      { type: "click", referral_code: "NO-SUCH-CODE" },
      { type: "signup", visitor_id: "v-batch", customer_email: "Customer@Example.com" },
      { type: "payment", customer_email: "customer@example.com", amount_cents: 10_000, external_id: "ch_batch" },
      { type: "payment", referral_code: aff.code, amount_cents: 1, external_id: "ch_seen" },
      { type: "signup", occurred_at: new Date(Date.now() + 3_600_000).toISOString() },
      { type: "payment", amount_cents: 10_000, external_id: "ch_batch" },
    ];
    const batch = await api("POST", "/events/batch", { events });
    expect(batch.status).toBe(200);
    expect(batch.json.results.map((r: { status: number }) => r.status)).toEqual([201, 404, 201, 201, 200, 400, 200]);
    expect(batch.json.summary).toEqual({ total: 7, recorded: 3, replayed: 2, failed: 2 });
    const [click, unknown, signup, payment, replay, invalid, repeat] = batch.json.results;
    expect(click.data).toMatchObject({ partnership_id: aff.id, visitor_id: "v-batch" });
    // Attributed in order: the signup through the click before it, the payment through the signup.
    expect(signup.data.partnership_id).toBe(aff.id);
    expect(payment.data.partnership_id).toBe(aff.id);
    expect(
      payment.data.commissions.map((c: { level: number; amount_cents: number }) => [c.level, c.amount_cents]),
    ).toEqual([
      [1, 2000],
      [2, 500],
    ]);
    expect(repeat.data).toEqual(payment.data);
    expect(replay.data).toEqual(seen.json.data);

    // The failures are exactly those of POST /events.
    const aloneUnknown = await api("POST", "/events", events[1]);
    expect([unknown.status, { error: unknown.error }]).toEqual([aloneUnknown.status, aloneUnknown.json]);
    const aloneInvalid = await api("POST", "/events", events[5]);
    expect([invalid.status, { error: invalid.error, details: invalid.details }]).toEqual([
      aloneInvalid.status,
      aloneInvalid.json,
    ]);
    expect(await invariantViolations(ledgerSql as unknown as Queryable)).toEqual([]);
  });

  it("records the same external_id once across concurrent batches", async () => {
    const aff = await sponsoredAffiliate("concurrent");
    const ids = Array.from({ length: 50 }, (_, i) => `ch_concurrent_${i}`);
    const batchOf = (order: string[]) => ({
      events: order.map((externalId) => ({
        type: "payment",
        referral_code: aff.code,
        amount_cents: 1000,
        external_id: externalId,
      })),
    });
    const answers = await Promise.all(
      [ids, [...ids].reverse(), ids, [...ids].reverse()].map((order) => api("POST", "/events/batch", batchOf(order))),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const recorded = answers.reduce((sum, a) => sum + a.json.summary.recorded, 0);
    const replayed = answers.reduce((sum, a) => sum + a.json.summary.replayed, 0);
    expect([recorded, replayed]).toEqual([50, 150]);
    const [row] = await ledgerSql<{ events: number; commissions: number }[]>`
      select (select count(*) from tracking_events where external_id like 'ch_concurrent_%')::int as events,
             (select count(*) from commissions c join tracking_events e on e.id = c.event_id
              where e.external_id like 'ch_concurrent_%')::int as commissions`;
    expect(row).toEqual({ events: 50, commissions: 100 });
    expect(await invariantViolations(ledgerSql as unknown as Queryable)).toEqual([]);
  });
});

describe("single POST /events, coalesced", () => {
  it("answers 100 concurrent requests each on its own; a bad one affects no other", async () => {
    const aff = await sponsoredAffiliate("coalesced");
    await api("POST", "/events", {
      type: "payment",
      referral_code: aff.code,
      amount_cents: 500,
      external_id: "ch_old",
    });
    const bodies = Array.from({ length: 100 }, (_, i) => {
      if (i % 20 === 1) return { type: "click", referral_code: "NO-SUCH-CODE" };
      if (i % 20 === 2) return { type: "payment", referral_code: aff.code, external_id: `ch_no_amount_${i}` };
      if (i % 20 === 3) return { type: "payment", referral_code: aff.code, amount_cents: 999, external_id: "ch_old" };
      if (i % 20 === 4) return { type: "signup", occurred_at: "2001-01-01T00:00:00.000Z" };
      if (i % 2 === 0) return { type: "click", referral_code: aff.code, visitor_id: `v-single-${i}` };
      return { type: "payment", referral_code: aff.code, amount_cents: 100 * i, external_id: `ch_single_${i}` };
    });
    const sandbox = { type: "click", referral_code: aff.code, visitor_id: "v-sandbox" };
    const [answers, sandboxAnswer] = await Promise.all([
      Promise.all(bodies.map((body) => api("POST", "/events", body))),
      api("POST", "/events", sandbox, testKey),
    ]);
    for (const [i, answer] of answers.entries()) {
      const body = bodies[i] as { type: string; amount_cents?: number; visitor_id?: string };
      if (i % 20 === 1)
        expect(answer, `request ${i}`).toEqual({ status: 404, json: { error: "Unknown referral code" } });
      else if (i % 20 === 2) {
        expect(answer.status, `request ${i}`).toBe(400);
        expect(answer.json.details.fieldErrors, `request ${i}`).toHaveProperty("amount_cents");
      } else if (i % 20 === 3) {
        expect(answer.status, `request ${i}`).toBe(200);
        expect(answer.json.data.commissions[0].amount_cents, `request ${i}`).toBe(100);
      } else if (i % 20 === 4) {
        expect(answer.status, `request ${i}`).toBe(400);
        expect(answer.json.details.fieldErrors, `request ${i}`).toHaveProperty("occurred_at");
      } else if (body.type === "click") {
        expect(answer.status, `request ${i}`).toBe(201);
        expect(answer.json.data, `request ${i}`).toMatchObject({ visitor_id: body.visitor_id, test_mode: false });
      } else {
        expect(answer.status, `request ${i}`).toBe(201);
        const amounts = answer.json.data.commissions.map((c: { amount_cents: number }) => c.amount_cents);
        expect(amounts, `request ${i}`).toEqual([(body.amount_cents ?? 0) / 5, (body.amount_cents ?? 0) / 20]);
      }
    }
    expect(sandboxAnswer).toMatchObject({ status: 201, json: { data: { test_mode: true, visitor_id: "v-sandbox" } } });
    const [row] = await ledgerSql<{ clicks: number; payments: number; sandbox: number }[]>`
      select count(*) filter (where event_type = 'click' and visitor_id like 'v-single-%')::int as clicks,
             count(*) filter (where external_id like 'ch_single_%')::int as payments,
             (select count(*) from sandbox_events where visitor_id = 'v-sandbox')::int as sandbox
      from tracking_events`;
    // Of every 20 requests, 4 fail or replay; 8 of the rest are clicks and 8 payments.
    expect(row).toEqual({ clicks: 40, payments: 40, sandbox: 1 });
  });

  it("a stats read right after a recorded event includes it", async () => {
    const aff = await sponsoredAffiliate("stats");
    const before = await api("GET", "/api/v1/stats?period=7d");
    const event = await api("POST", "/events", { type: "click", referral_code: aff.code });
    expect(event.status).toBe(201);
    const after = await api("GET", "/api/v1/stats?period=7d");
    expect(after.json.data.clicks).toBe(before.json.data.clicks + 1);
    const affiliate = await api("GET", `/api/v1/affiliates/${aff.id}`);
    expect(affiliate.json.data.stats.clicks).toBe(1);
    expect(await invariantViolations(ledgerSql as unknown as Queryable)).toEqual([]);
  });
});
