import type { DomainEvent } from "@affiliate/proto/events";
import { ProductKeysRotatedSchema } from "@affiliate/proto/partners";
import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampNow } from "@bufbuild/protobuf/wkt";
import { context, propagation, trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace";
import type { JetStreamManager, NatsConnection } from "nats";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../src/db.js";
import {
  connectNats,
  enqueueDomainEvent,
  enqueueDomainEvents,
  enqueueEvent,
  enqueueEvents,
  ensureStream,
} from "../src/events.js";
import { newId } from "../src/ids.js";
import { migrate } from "../src/migrate.js";
import { type OutboxRelay, type OutboxRelayOptions, startOutboxRelay } from "../src/outbox-relay.js";
import { capturingLogger, eventually, type LogLine, migrationsDirectory, silentLogger } from "./helpers.js";

const schema = "svc";
const subject = "svc.product.keys_rotated";
/** A test service's event type, shaped as the registry in @affiliate/proto/events shapes them. */
const keysRotatedEvent: DomainEvent<typeof ProductKeysRotatedSchema> = {
  service: "svc",
  subject,
  schema: ProductKeysRotatedSchema,
};

let database: TestDatabase;
let events: TestNamespace;
let sql: Sql;
let nc: NatsConnection;
let jsm: JetStreamManager;
let stream: string;
const relays: OutboxRelay[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  events = createTestNamespace();
  sql = createSql(database.url, { schema, applicationName: "t" });
  const empty = await migrationsDirectory();
  try {
    await migrate(sql, schema, empty.path);
  } finally {
    await empty.remove();
  }
  nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "platform-outbox-test");
  jsm = await nc.jetstreamManager();
  stream = await ensureStream(jsm, { service: "svc", namespace: events.namespace });
});

beforeEach(async () => {
  await sql`delete from outbox`;
  await jsm.streams.purge(stream);
});

afterEach(async () => {
  for (const relay of relays.splice(0)) await relay.stop();
});

afterAll(async () => {
  for (const relay of relays.splice(0)) await relay.stop();
  await nc?.close();
  await sql?.end();
  await events?.cleanup();
  await database?.drop();
});

function relay(options: Partial<OutboxRelayOptions> = {}): OutboxRelay {
  const started = startOutboxRelay({
    sql,
    nats: nc,
    schema,
    namespace: events.namespace,
    logger: silentLogger,
    ...options,
  });
  relays.push(started);
  return started;
}

const keysRotated = (productId = "prd_1") =>
  create(ProductKeysRotatedSchema, { id: newId("msg"), occurredAt: timestampNow(), productId });

/** Enqueues an event in a transaction of its own, as a use case does with its state change. */
async function enqueue(event = keysRotated()) {
  await sql.begin((tx) => enqueueEvent(tx, keysRotatedEvent, event));
  return event;
}

async function outboxIds(): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from outbox order by seq`;
  return rows.map((row) => row.id);
}

/** Every message in the stream, oldest first. */
async function streamMessages() {
  const info = await jsm.streams.info(stream);
  const messages = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    messages.push(await jsm.streams.getMessage(stream, { seq }));
  }
  return messages;
}

const failedAttempts = (lines: LogLine[]) =>
  lines.filter((line) => line.msg === "outbox relay failed to publish; will retry").length;

const messageIds = async () => (await streamMessages()).map((message) => message.header.get("Nats-Msg-Id"));

describe("outbox relay", () => {
  it("publishes a committed event to the namespaced subject with its id as Nats-Msg-Id, then deletes it", async () => {
    relay({ pollMs: 100 });
    const event = await enqueue();

    await eventually("the event in the stream", async () => (await streamMessages()).length > 0);
    await eventually("the outbox row deleted", async () => (await outboxIds()).length === 0);

    const [message, ...rest] = await streamMessages();
    expect(rest).toEqual([]);
    expect(message?.subject).toBe(`${events.namespace}.${subject}`);
    expect(message?.header.get("Nats-Msg-Id")).toBe(event.id);
    expect(fromBinary(ProductKeysRotatedSchema, message?.data ?? new Uint8Array())).toEqual(event);
  });

  it("never publishes an event whose transaction rolled back", async () => {
    relay({ pollMs: 100 });
    const rolledBack = keysRotated("prd_rolled_back");
    await expect(
      sql.begin(async (tx) => {
        await enqueueEvent(tx, keysRotatedEvent, rolledBack);
        throw new Error("use case failed after writing its event");
      }),
    ).rejects.toThrow("use case failed");
    // Published in commit order: once a later event is out, the rolled-back one would be too.
    const later = await enqueue();

    await eventually("the later event in the stream", async () => (await messageIds()).includes(later.id));
    expect(await messageIds()).toEqual([later.id]);
    expect(await outboxIds()).toEqual([]);
  });

  it("publishes in commit order", async () => {
    relay({ pollMs: 100, batchSize: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await enqueue()).id);
    await eventually("all five in the stream", async () => (await messageIds()).length === 5);
    expect(await messageIds()).toEqual(ids);
  });

  it("wakes after a commit that wrote the outbox instead of waiting for its next poll (no NOTIFY sent)", async () => {
    const first = await enqueue();
    // A minute between polls: an event that arrives within the wait below came by the wake-up.
    relay({ pollMs: 60_000 });
    // The relay's first pass publishes `first`; after it, the relay sleeps.
    await eventually("the first event published", async () => (await outboxIds()).length === 0);

    const second = await enqueue();

    await eventually("the second event published", async () => (await messageIds()).includes(second.id), {
      timeoutMs: 20_000,
    });
    expect(await messageIds()).toEqual([first.id, second.id]);
  });

  it("still wakes on a NOTIFY sent by hand, for rows written outside the process", async () => {
    const first = await enqueue();
    relay({ pollMs: 60_000 });
    await eventually("the first event published", async () => (await outboxIds()).length === 0);
    await eventually("the relay listening", async () => {
      const rows = await sql`
        select 1 from pg_stat_activity
        where datname = current_database() and query ilike ${`listen%${schema}_outbox%`}`;
      return rows.length > 0;
    });
    // As another process would write it: a row, then a NOTIFY, and no wake-up in this process.
    const second = keysRotated();
    await sql`
      insert into outbox (id, subject, payload)
      values (${second.id}, ${subject}, ${Buffer.from(toBinary(ProductKeysRotatedSchema, second))})`;
    await sql`select pg_notify(${`${schema}_outbox`}, '')`;

    await eventually("the second event published", async () => (await messageIds()).includes(second.id), {
      timeoutMs: 20_000,
    });
    expect(await messageIds()).toEqual([first.id, second.id]);
  });

  it("enqueues many events with one statement, in order, and the relay wakes for them", async () => {
    const first = await enqueue();
    relay({ pollMs: 60_000 });
    await eventually("the first event published", async () => (await outboxIds()).length === 0);

    const batch = Array.from({ length: 5 }, (_, i) => keysRotated(`prd_batch_${i}`));
    await sql.begin(async (tx) => {
      await enqueueEvents(tx, keysRotatedEvent, batch);
      await enqueueEvents(tx, keysRotatedEvent, []);
    });

    // Published on the wake-up after the commit (a minute between polls), in the order given,
    // each as it was written.
    await eventually("the batch published", async () => (await messageIds()).length === 6, { timeoutMs: 20_000 });
    expect(await messageIds()).toEqual([first.id, ...batch.map((event) => event.id)]);
    const published = (await streamMessages()).slice(1);
    expect(published.map((message) => fromBinary(ProductKeysRotatedSchema, message.data))).toEqual(batch);
  });

  it("gives a domain event its envelope: a new msg_ id, which keys the outbox row, and the time of enqueueing", async () => {
    const before = Date.now();
    await sql.begin(async (tx) => {
      await enqueueDomainEvent(tx, keysRotatedEvent, { productId: "prd_one" });
      await enqueueDomainEvents(tx, keysRotatedEvent, [{ productId: "prd_two" }, { productId: "prd_three" }]);
    });
    const after = Date.now();
    const rows = await sql<{ id: string; payload: Uint8Array }[]>`select id, payload from outbox order by seq`;
    const messages = rows.map((row) => fromBinary(ProductKeysRotatedSchema, row.payload));
    expect(messages.map((message) => message.productId)).toEqual(["prd_one", "prd_two", "prd_three"]);
    expect(messages.map((message) => message.id)).toEqual(rows.map((row) => row.id));
    for (const message of messages) {
      expect(message.id).toMatch(/^msg_/);
      const occurredAt = message.occurredAt ? timestampDate(message.occurredAt).getTime() : 0;
      expect(occurredAt >= before && occurredAt <= after).toBe(true);
    }
    expect(new Set(messages.map((message) => message.id)).size).toBe(3);
  });

  it("publishes an event twice at most once: the stream drops a re-publish of the same id", async () => {
    relay({ pollMs: 100 });
    const event = await enqueue();
    await eventually("the event published", async () => (await outboxIds()).length === 0);

    // As after a crash between publish and delete: the same row is in the outbox again.
    await enqueue(event);
    await eventually("the row relayed again", async () => (await outboxIds()).length === 0);

    expect((await jsm.streams.info(stream)).state.messages).toBe(1);
    expect(await messageIds()).toEqual([event.id]);
  });

  it("pipelines a batch's publishes and keeps their order across batches", async () => {
    const marker = await enqueue();
    const idle = relay({ schema: "nobody_notifies", pollMs: 60_000, batchSize: 50 });
    await eventually("the first pass done", async () => (await outboxIds()).length === 0);
    const batch = Array.from({ length: 120 }, (_, i) => keysRotated(`prd_${i}`));
    await sql.begin((tx) => enqueueEvents(tx, keysRotatedEvent, batch));
    expect(await idle.flush()).toBe(120);
    expect(await messageIds()).toEqual([marker.id, ...batch.map((event) => event.id)]);
    expect(await outboxIds()).toEqual([]);
  });

  it("a batch with one refused publish keeps every row; published again, the others are not duplicated", async () => {
    const { logger, lines } = capturingLogger();
    const marker = await enqueue();
    const idle = relay({ schema: "nobody_notifies", pollMs: 60_000, logger });
    await eventually("the first pass done", async () => (await outboxIds()).length === 0);
    const before = await enqueue();
    // A subject no stream holds, between two that the stream takes: the server answers "no
    // responders" to that one publish while the others are acknowledged.
    const stray = keysRotated("prd_stray");
    await sql`
      insert into outbox (id, subject, payload) values (${stray.id}, 'nowhere.product.keys_rotated', ${Buffer.from("x")})`;
    const after = await enqueue();

    await expect(idle.flush()).rejects.toThrow(/no stream answered/);
    expect(await outboxIds()).toEqual([before.id, stray.id, after.id]);
    // The two good ones did reach the stream in the failed attempt.
    expect(await messageIds()).toEqual([marker.id, before.id, after.id]);

    await sql`delete from outbox where id = ${stray.id}`;
    expect(await idle.flush()).toBe(2);
    expect(await outboxIds()).toEqual([]);
    // Their second publish was dropped by the stream as a duplicate of the same Nats-Msg-Id.
    expect(await messageIds()).toEqual([marker.id, before.id, after.id]);
    expect((await jsm.streams.info(stream)).state.messages).toBe(3);
    expect(failedAttempts(lines)).toBe(0);
  });

  it("keeps the rows when NATS cannot be reached, and a later relay publishes them", async () => {
    const unreachable = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "platform-outbox-closed");
    await unreachable.close();
    const { logger, lines } = capturingLogger();
    const broken = relay({ nats: unreachable, logger, pollMs: 100 });
    const event = await enqueue();

    await eventually("two failed attempts", () => failedAttempts(lines) >= 2);
    expect(await outboxIds()).toEqual([event.id]);
    // stop() tries a last flush, which fails: the row stays for the next start.
    await broken.stop();
    relays.splice(relays.indexOf(broken), 1);
    expect(lines.some((line) => line.msg.startsWith("outbox relay could not flush on shutdown"))).toBe(true);
    expect(await outboxIds()).toEqual([event.id]);
    expect(await messageIds()).toEqual([]);

    relay({ pollMs: 100 });
    await eventually("the event published", async () => (await messageIds()).includes(event.id));
    await eventually("the row deleted", async () => (await outboxIds()).length === 0);
  });

  it("keeps the rows when the stream refuses the publish", async () => {
    const { logger, lines } = capturingLogger();
    // No stream holds this namespace's subjects: every publish fails.
    relay({ namespace: "no_stream_here", logger, pollMs: 100 });
    const event = await enqueue();

    await eventually("two failed attempts", () => failedAttempts(lines) >= 2);
    expect(await outboxIds()).toEqual([event.id]);
  });

  it("stop() publishes the rows still due", async () => {
    const marker = await enqueue();
    // Listening on a channel nobody notifies and polling once a minute: only stop() publishes
    // what is enqueued after the first pass.
    const stopping = relay({ schema: "nobody_notifies", pollMs: 60_000, batchSize: 2 });
    await eventually("the first pass done", async () => (await outboxIds()).length === 0);

    const pending: string[] = [];
    for (let i = 0; i < 5; i++) pending.push((await enqueue()).id);
    expect(await outboxIds()).toEqual(pending);

    await stopping.stop();
    relays.splice(relays.indexOf(stopping), 1);

    expect(await outboxIds()).toEqual([]);
    expect(await messageIds()).toEqual([marker.id, ...pending]);
  });

  it("flush() resolves with the number of events published", async () => {
    await enqueue();
    const idle = relay({ schema: "nobody_notifies", pollMs: 60_000, batchSize: 2 });
    await eventually("the first pass done", async () => (await outboxIds()).length === 0);
    for (let i = 0; i < 3; i++) await enqueue();
    expect(await idle.flush()).toBe(3);
    expect(await idle.flush()).toBe(0);
    expect(await messageIds()).toHaveLength(4);
  });

  it("stores the trace context of the enqueuing span and publishes it as message headers", async () => {
    // The SDK registers the tracer provider, W3C propagator and async context globally.
    const sdk = new NodeSDK({ spanProcessors: [new NoopSpanProcessor()] });
    sdk.start();
    try {
      const tracer = trace.getTracer("platform-test");
      const event = keysRotated();
      const spanContext = await tracer.startActiveSpan("rotate keys", async (span) => {
        await sql.begin((tx) => enqueueEvent(tx, keysRotatedEvent, event));
        span.end();
        return span.spanContext();
      });
      // The row keeps the context of the transaction that wrote it (a span of the caller's trace).
      const sameTrace = new RegExp(`^00-${spanContext.traceId}-[0-9a-f]{16}-01$`);
      const [row] = await sql<{ headers: Record<string, string> }[]>`select headers from outbox where id = ${event.id}`;
      expect(Object.keys(row?.headers ?? {})).toEqual(["traceparent"]);
      expect(row?.headers.traceparent).toMatch(sameTrace);

      // The message carries the relay's publish span: the same trace, one span further on.
      relay({ pollMs: 100 });
      await eventually("the event published", async () => (await messageIds()).includes(event.id));
      const [message] = await streamMessages();
      expect(message?.header.get("traceparent")).toMatch(sameTrace);
      expect(message?.header.get("traceparent")).not.toBe(row?.headers.traceparent);
    } finally {
      await sdk.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    }
  });

  it("stores no trace headers outside a span", async () => {
    const event = await enqueue();
    const [row] = await sql<{ headers: Record<string, string> }[]>`select headers from outbox where id = ${event.id}`;
    expect(row?.headers).toEqual({});
  });
});
