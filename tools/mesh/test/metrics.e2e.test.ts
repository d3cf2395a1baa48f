import {
  createTestDatabase,
  createTestNamespace,
  metricFamilies,
  scrapeMetrics,
  sumOf,
  type TestDatabase,
  type TestNamespace,
} from "@affiliate/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mesh } from "../src/mesh.js";
import { createProduct, eventually, startTestMesh } from "./helpers.js";

/**
 * Every service serves Prometheus metrics on its own METRICS_PORT: the mesh is started as
 * `npm start` starts it, driven over its public API, and each service is scraped as Prometheus
 * would scrape it. The counts must match the requests this test made.
 */
let database: TestDatabase;
let namespace: TestNamespace;
let mesh: Mesh;
let key: string;

beforeAll(async () => {
  database = await createTestDatabase();
  namespace = createTestNamespace();
  mesh = await startTestMesh({
    databaseUrl: database.url,
    env: { EVENTS_NAMESPACE: namespace.namespace, LOG_LEVEL: "warn", PAYOUT_INTERVAL_MS: "0" },
  });
  key = (await createProduct(mesh, "Metrics e2e")).secret_key;
});

afterAll(async () => {
  await mesh?.stop();
  await namespace?.cleanup();
  await database?.drop();
});

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(mesh.gatewayUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

const scrape = async (service: string) => scrapeMetrics(mesh.metricsUrls[service] ?? "");

const commonFamilies = [
  "nodejs_eventloop_lag_seconds",
  "nodejs_eventloop_lag_p99_seconds",
  "process_cpu_seconds_total",
];
const rpcServiceFamilies = [
  "rpc_server_requests_total",
  "rpc_server_duration_seconds",
  "outbox_backlog_events",
  "outbox_oldest_event_age_seconds",
  "outbox_published_events_total",
  "db_pool_connections",
  "db_pool_max_connections",
];
const consumerFamilies = [
  "consumer_pending_events",
  "consumer_unacknowledged_events",
  "consumer_events_total",
  "consumer_redeliveries_total",
];

const jobFamilies = ["jobs_due", "jobs_oldest_due_age_seconds", "jobs_in_flight", "jobs_runs_total"];

describe("metrics of the mesh", () => {
  it("every service serves the RED, queue, pool and event-loop families on its METRICS_PORT", async () => {
    const expected: Record<string, string[]> = {
      gateway: [
        ...commonFamilies,
        "http_server_requests_total",
        "http_server_duration_seconds",
        "rpc_client_requests_total",
      ],
      partners: [...commonFamilies, ...rpcServiceFamilies],
      ledger: [...commonFamilies, ...rpcServiceFamilies, ...consumerFamilies, "rpc_client_requests_total"],
      payouts: [...commonFamilies, ...rpcServiceFamilies, ...consumerFamilies],
      // webhook_attempts_total: every outcome is declared at 0 from the start (issue 23 item 6).
      notifier: [
        ...commonFamilies,
        ...rpcServiceFamilies,
        ...consumerFamilies,
        ...jobFamilies,
        "webhook_attempts_total",
      ],
      privacy: [...commonFamilies, ...rpcServiceFamilies, "rpc_client_requests_total"],
    };
    // A registration and a payment: every family with labels has at least one series by now.
    expect(
      await api("POST", "/api/v1/affiliates", { email: "ada@example.com", name: "Ada", referralCode: "ADA" }),
    ).toBe(201);
    expect(
      await api("POST", "/events", { type: "payment", referral_code: "ADA", amount_cents: 10_000, external_id: "m1" }),
    ).toBe(201);
    for (const [service, families] of Object.entries(expected)) {
      const declared = metricFamilies((await scrape(service)).text);
      for (const family of families)
        expect({ service, family, declared: declared.has(family) }).toMatchObject({ declared: true });
    }
  });

  it("counts the requests made, per route on the gateway and per RPC on the services", async () => {
    const before = {
      gateway: (await scrape("gateway")).samples,
      partners: (await scrape("partners")).samples,
      ledger: (await scrape("ledger")).samples,
    };
    for (let i = 0; i < 3; i++) expect(await api("GET", "/api/v1/program")).toBe(200);
    for (let i = 0; i < 2; i++) expect(await api("POST", "/events", { type: "click", referral_code: "ADA" })).toBe(201);
    expect(await api("POST", "/events", { type: "click", referral_code: "NOBODY" })).toBe(404);
    expect(await api("GET", "/no/such/route")).toBe(404);

    const gateway = (await scrape("gateway")).samples;
    const partners = (await scrape("partners")).samples;
    const ledger = (await scrape("ledger")).samples;
    const grew = (after: typeof gateway, earlier: typeof gateway, name: string, labels: Record<string, string>) =>
      sumOf(after, name, labels) - sumOf(earlier, name, labels);

    const program = { method: "GET", route: "/api/v1/program" };
    expect(grew(gateway, before.gateway, "http_server_requests_total", { ...program, status_code: "200" })).toBe(3);
    expect(grew(gateway, before.gateway, "http_server_duration_seconds_count", program)).toBe(3);
    const events = { method: "POST", route: "/events" };
    expect(grew(gateway, before.gateway, "http_server_requests_total", { ...events, status_code: "201" })).toBe(2);
    expect(grew(gateway, before.gateway, "http_server_requests_total", { ...events, status_code: "404" })).toBe(1);
    expect(grew(gateway, before.gateway, "http_server_requests_total", { route: "(unmatched)" })).toBe(1);

    const getProgram = { rpc_service: "affiliate.partners.v1.PartnersService", rpc_method: "GetProgram", code: "ok" };
    expect(grew(gateway, before.gateway, "rpc_client_requests_total", getProgram)).toBe(3);
    expect(grew(partners, before.partners, "rpc_server_requests_total", getProgram)).toBe(3);
    // Single events reach the ledger through the gateway's coalescer: one TrackBatch call each
    // here (sent one after another), which succeeds as a call; each event's own outcome (the 404)
    // is counted on the gateway's route above.
    const trackBatch = { rpc_service: "affiliate.ledger.v1.LedgerService", rpc_method: "TrackBatch" };
    expect(grew(ledger, before.ledger, "rpc_server_requests_total", { ...trackBatch, code: "ok" })).toBe(3);
    expect(grew(ledger, before.ledger, "rpc_server_duration_seconds_count", trackBatch)).toBe(3);
  });

  it("shows events flowing through the outbox to the consumers", async () => {
    expect(
      await api("POST", "/events", { type: "payment", referral_code: "ADA", amount_cents: 5000, external_id: "m2" }),
    ).toBe(201);
    expect(await api("POST", "/api/v1/refunds", { external_id: "m2", refund_amount_cents: 5000 })).toBe(200);
    // The ledger published commission.created and commission.refunded; payouts consumed the refund.
    await eventually(async () => {
      const ledger = (await scrape("ledger")).samples;
      expect(sumOf(ledger, "outbox_published_events_total", { schema: "ledger" })).toBeGreaterThanOrEqual(3);
      expect(sumOf(ledger, "outbox_backlog_events", { schema: "ledger" })).toBe(0);
      const payouts = (await scrape("payouts")).samples;
      expect(sumOf(payouts, "consumer_events_total")).toBeGreaterThanOrEqual(1);
      expect(sumOf(payouts, "consumer_pending_events")).toBe(0);
      // The notifier consumes the commission events too (recording nothing without a webhook).
      const notifier = (await scrape("notifier")).samples;
      expect(sumOf(notifier, "consumer_events_total")).toBeGreaterThanOrEqual(2);
    }, 15_000);
    const partners = (await scrape("partners")).samples;
    expect(sumOf(partners, "db_pool_max_connections", { pool: "partners" })).toBeGreaterThan(0);
  });

  it("serves metrics on no public or RPC port", async () => {
    expect((await fetch(`${mesh.gatewayUrl}/metrics`)).status).toBe(404);
    const metricsPorts = Object.values(mesh.metricsUrls).map((url) => new URL(url).port);
    const publicPort = new URL(mesh.gatewayUrl).port;
    const rpcPorts = Object.values(mesh.urls).map((url) => new URL(url).port);
    for (const port of metricsPorts) expect([publicPort, ...rpcPorts]).not.toContain(port);
  });
});
