import { PartnersService, ProductKeysRotatedSchema } from "@affiliate/proto/partners";
import {
  createTestDatabase,
  createTestNamespace,
  type MetricSample,
  metricFamilies,
  scrapeMetrics,
  sumOf,
  type TestDatabase,
  type TestNamespace,
} from "@affiliate/testing";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DurableConsumer, startDurableConsumer } from "../src/consumer.js";
import { createSql, type Sql } from "../src/db.js";
import { DomainError } from "../src/errors.js";
import { connectNats, ensureStream, wireSubject } from "../src/events.js";
import { newId } from "../src/ids.js";
import {
  type MetricsServer,
  observeHttpRequest,
  sampleOnScrape,
  serviceCounter,
  startMetricsServer,
} from "../src/metrics.js";
import { migrate } from "../src/migrate.js";
import { observeOutbox, startOutboxRelay } from "../src/outbox-relay.js";
import { createRpcTransport } from "../src/rpc-client.js";
import { startRpcServer } from "../src/rpc-server.js";
import { eventually, migrationsDirectory, silentLogger } from "./helpers.js";

/**
 * The metrics every service gets from the platform, read the way Prometheus reads them: over
 * HTTP from the metrics server's own port. The registry is one per process, so each test compares
 * a family before and after what it does.
 */
const schema = "svc";

let database: TestDatabase;
let events: TestNamespace;
let sql: Sql;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let stream: string;
let metrics: MetricsServer;

const scrape = async () => (await scrapeMetrics(`http://127.0.0.1:${metrics.port}/metrics`)).samples;

beforeAll(async () => {
  database = await createTestDatabase();
  events = createTestNamespace();
  sql = createSql(database.url, { schema, max: 4, applicationName: "metrics-test" });
  const empty = await migrationsDirectory();
  try {
    await migrate(sql, schema, empty.path);
  } finally {
    await empty.remove();
  }
  nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "platform-metrics-test");
  js = nc.jetstream();
  jsm = await nc.jetstreamManager();
  stream = await ensureStream(jsm, { service: "svc", namespace: events.namespace });
  metrics = await startMetricsServer({ port: 0, host: "127.0.0.1", logger: silentLogger, sql, service: "svc" });
});

afterAll(async () => {
  await metrics?.close();
  await nc?.close();
  await sql?.end();
  await events?.cleanup();
  await database?.drop();
});

describe("the metrics server", () => {
  it("serves the Prometheus text format at GET /metrics only, with the process and event-loop families", async () => {
    const res = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = metricFamilies(await res.text());
    for (const family of [
      "nodejs_eventloop_lag_seconds",
      "nodejs_eventloop_lag_p99_seconds",
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
    ]) {
      expect(families).toContain(family);
    }
    expect((await fetch(`http://127.0.0.1:${metrics.port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metrics.port}/metrics`, { method: "POST" })).status).toBe(404);
  });

  it("still answers when a sampler hangs or fails, and counts the failure", async () => {
    const before = sumOf(await scrape(), "metrics_sampler_failures_total", { sampler: "broken" });
    const unregister = sampleOnScrape("broken", () => {
      throw new Error("unreachable");
    });
    try {
      expect(sumOf(await scrape(), "metrics_sampler_failures_total", { sampler: "broken" })).toBe(before + 1);
    } finally {
      unregister();
    }
  });
});

describe("a service's own counter", () => {
  it("is served with the platform's families, each initial label set from 0", async () => {
    const counter = serviceCounter({
      name: "svc_widgets_total",
      help: "Widgets by outcome.",
      labelNames: ["outcome"],
      initial: [{ outcome: "made" }, { outcome: "broken" }],
    });
    const before = await scrape();
    expect(sumOf(before, "svc_widgets_total", { outcome: "made" })).toBe(0);
    expect(sumOf(before, "svc_widgets_total", { outcome: "broken" })).toBe(0);
    expect(before.filter((sample) => sample.name === "svc_widgets_total")).toHaveLength(2);
    counter.inc({ outcome: "made" });
    counter.inc({ outcome: "made" });
    expect(sumOf(await scrape(), "svc_widgets_total", { outcome: "made" })).toBe(2);
  });
});

describe("RPC metrics", () => {
  it("count every call by method and code on both sides, with its duration", async () => {
    const server = await startRpcServer({
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
      readiness: async () => true,
      routes: (router) =>
        router.service(PartnersService, {
          getProgram: async () => ({}),
          authenticate: async () => {
            throw new DomainError("not_found", "No such key");
          },
        }),
    });
    try {
      const labels = { rpc_service: "affiliate.partners.v1.PartnersService" };
      const before = await scrape();
      const client = createClient(PartnersService, createRpcTransport(`http://127.0.0.1:${server.port}`));
      await client.getProgram({ productId: "prd_1" });
      await client.getProgram({ productId: "prd_1" });
      await expect(client.authenticate({ apiKey: "sk_live_x" })).rejects.toThrow("No such key");
      const after = await scrape();

      const delta = (name: string, more: Record<string, string>) =>
        sumOf(after, name, { ...labels, ...more }) - sumOf(before, name, { ...labels, ...more });
      for (const side of ["server", "client"]) {
        expect(delta(`rpc_${side}_requests_total`, { rpc_method: "GetProgram", code: "ok" })).toBe(2);
        expect(delta(`rpc_${side}_requests_total`, { rpc_method: "Authenticate", code: "not_found" })).toBe(1);
        expect(delta(`rpc_${side}_duration_seconds_count`, { rpc_method: "GetProgram" })).toBe(2);
        expect(delta(`rpc_${side}_duration_seconds_bucket`, { rpc_method: "GetProgram", le: "+Inf" })).toBe(2);
      }
    } finally {
      await server.close();
    }
  });
});

describe("HTTP metrics", () => {
  it("label requests by route template, never by raw path", async () => {
    const before = await scrape();
    observeHttpRequest({ method: "GET", route: "/api/v1/affiliates/:id", statusCode: 404, seconds: 0.003 });
    observeHttpRequest({ method: "GET", route: undefined, statusCode: 404, seconds: 0.001 });
    const after = await scrape();
    const delta = (labels: Record<string, string>) =>
      sumOf(after, "http_server_requests_total", labels) - sumOf(before, "http_server_requests_total", labels);
    expect(delta({ route: "/api/v1/affiliates/:id", status_code: "404", method: "GET" })).toBe(1);
    expect(delta({ route: "(unmatched)", status_code: "404" })).toBe(1);
  });
});

describe("outbox metrics", () => {
  it("show the backlog and the age of its oldest event, and count what the relay publishes", async () => {
    await sql`delete from outbox`;
    for (const ageSeconds of [90, 30, 5]) {
      const id = newId("msg");
      const payload = toBinary(ProductKeysRotatedSchema, create(ProductKeysRotatedSchema, { id, productId: "prd_1" }));
      await sql`
        insert into outbox (id, subject, payload, created_at)
        values (${id}, 'svc.product.keys_rotated', ${Buffer.from(payload)},
                now() - make_interval(secs => ${ageSeconds}))`;
    }
    const stopObserving = observeOutbox(sql, schema);
    try {
      const waiting = await scrape();
      expect(sumOf(waiting, "outbox_backlog_events", { schema })).toBe(3);
      expect(sumOf(waiting, "outbox_oldest_event_age_seconds", { schema })).toBeGreaterThanOrEqual(90);

      const publishedBefore = sumOf(waiting, "outbox_published_events_total", { schema });
      const relay = startOutboxRelay({ sql, nats: nc, schema, namespace: events.namespace, logger: silentLogger });
      try {
        // The counter moves once the relay's transaction has committed, just after the rows are
        // gone: a scrape may fall between the two.
        const drained = await eventually("the relay drains the outbox and counts it", async () => {
          const samples = await scrape();
          const empty = sumOf(samples, "outbox_backlog_events", { schema }) === 0;
          const counted = sumOf(samples, "outbox_published_events_total", { schema }) - publishedBefore === 3;
          return empty && counted ? samples : undefined;
        });
        expect(sumOf(drained, "outbox_oldest_event_age_seconds", { schema })).toBe(0);
        expect(sumOf(drained, "outbox_published_events_total", { schema }) - publishedBefore).toBe(3);
      } finally {
        await relay.stop();
      }
    } finally {
      stopObserving();
    }
    // Stopped observers leave no stale series behind.
    expect((await scrape()).some((s) => s.name === "outbox_backlog_events" && s.labels.schema === schema)).toBe(false);
  });
});

describe("consumer metrics", () => {
  it("show events waiting for the consumer and count outcomes and redeliveries", async () => {
    const durable = "svc-metrics-test";
    const subject = "svc.product.keys_rotated";
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The outbox test published on this stream: the consumer must see only this test's events.
    await jsm.streams.purge(stream);
    const ids = [0, 1, 2].map(() => newId("msg"));
    let failedOnce = false;
    const consumer: DurableConsumer = await startDurableConsumer({
      sql,
      js,
      jsm,
      stream,
      durable,
      subject,
      namespace: events.namespace,
      logger: silentLogger,
      handle: async (_tx, event) => {
        await gate;
        // The first attempt of the first event fails: it is nak'ed and redelivered.
        if (!failedOnce && event.id === ids[0]) {
          failedOnce = true;
          throw new Error("transient");
        }
      },
    });
    try {
      const before = await scrape();
      for (const id of ids) {
        await js.publish(
          wireSubject(events.namespace, subject),
          toBinary(ProductKeysRotatedSchema, create(ProductKeysRotatedSchema, { id, productId: "prd_1" })),
          { msgID: id },
        );
      }
      // Delivered while the handler is held: all three wait unacknowledged.
      await eventually("three events delivered and unacknowledged", async () => {
        const samples = await scrape();
        return sumOf(samples, "consumer_unacknowledged_events", { durable }) === 3;
      });
      release();
      const done = await eventually("all three applied", async () => {
        const samples = await scrape();
        return delta(samples, before, "consumer_events_total", { durable, outcome: "applied" }) === 3
          ? samples
          : undefined;
      });
      expect(delta(done, before, "consumer_events_total", { durable, outcome: "retried" })).toBe(1);
      expect(delta(done, before, "consumer_redeliveries_total", { durable })).toBe(1);
      await eventually("nothing left for the consumer", async () => {
        const samples = await scrape();
        return (
          sumOf(samples, "consumer_unacknowledged_events", { durable }) === 0 &&
          sumOf(samples, "consumer_pending_events", { durable }) === 0
        );
      });
    } finally {
      release();
      await consumer.stop();
    }
  });
});

describe("database pool metrics", () => {
  it("count this process's connections by state and show the pool's size", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let opened: () => void = () => {};
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const transaction = sql.begin(async (tx) => {
      await tx`select 1`;
      opened();
      await held;
    });
    try {
      await open;
      const samples = await scrape();
      expect(sumOf(samples, "db_pool_max_connections", { pool: "svc" })).toBe(4);
      expect(sumOf(samples, "db_pool_connections", { pool: "svc", state: "idle in transaction" })).toBe(1);
    } finally {
      release();
      await transaction;
    }
  });
});

function delta(after: MetricSample[], before: MetricSample[], name: string, labels: Record<string, string>) {
  return sumOf(after, name, labels) - sumOf(before, name, labels);
}
