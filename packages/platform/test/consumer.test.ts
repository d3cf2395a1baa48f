import { createTestDatabase, createTestNamespace, type TestDatabase, type TestNamespace } from "@affiliate/testing";
import { context, propagation, trace } from "@opentelemetry/api";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { NoopSpanProcessor } from "@opentelemetry/sdk-trace";
import { headers, type JetStreamClient, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  appliedEventRetentionMs,
  type DurableConsumer,
  type DurableConsumerOptions,
  purgeAppliedEvents,
  startDurableConsumer,
  UndecodableEvent,
} from "../src/consumer.js";
import { createSql, type Sql } from "../src/db.js";
import { connectNats, ensureStream, wireSubject } from "../src/events.js";
import { newId } from "../src/ids.js";
import { migrate } from "../src/migrate.js";
import { eventually, migrationsDirectory, silentLogger } from "./helpers.js";

const schema = "svc";

let database: TestDatabase;
let events: TestNamespace;
let sql: Sql;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let stream: string;
const consumers: DurableConsumer[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  events = createTestNamespace();
  sql = createSql(database.url, { schema, applicationName: "t" });
  // No unique key: an event applied twice would show as two rows.
  const dir = await migrationsDirectory({
    "0001_effects.sql": "create table effects (event_id text not null, subject text not null, data bytea not null);",
  });
  try {
    await migrate(sql, schema, dir.path);
  } finally {
    await dir.remove();
  }
  nc = await connectNats(process.env.NATS_URL ?? "nats://127.0.0.1:4222", "platform-consumer-test");
  js = nc.jetstream();
  jsm = await nc.jetstreamManager();
  stream = await ensureStream(jsm, { service: "svc", namespace: events.namespace });
});

afterEach(async () => {
  for (const consumer of consumers.splice(0)) await consumer.stop();
});

afterAll(async () => {
  for (const consumer of consumers.splice(0)) await consumer.stop();
  await nc?.close();
  await sql?.end();
  await events?.cleanup();
  await database?.drop();
});

interface Delivery {
  id: string;
  subject: string;
  data: string;
}

/**
 * A durable consumer on its own subject whose handler records each call and writes an effect
 * row in the transaction it is given; `fail` decides, per call, whether the handler throws
 * after writing.
 */
async function consume(
  subject: string,
  durable: string,
  fail: (delivery: Delivery, call: number) => Error | undefined,
  changesNothing?: DurableConsumerOptions["changesNothing"],
) {
  const calls: Delivery[] = [];
  const handle: DurableConsumerOptions["handle"] = async (tx, message) => {
    const delivery = { id: message.id, subject: message.subject, data: Buffer.from(message.data).toString() };
    calls.push(delivery);
    await tx`insert into effects (event_id, subject, data) values (${message.id}, ${message.subject}, ${Buffer.from(message.data)})`;
    const error = fail(delivery, calls.length);
    if (error) throw error;
  };
  const consumer = await startDurableConsumer({
    sql,
    js,
    jsm,
    stream,
    durable,
    subject,
    namespace: events.namespace,
    logger: silentLogger,
    handle,
    ...(changesNothing ? { changesNothing } : {}),
  });
  consumers.push(consumer);
  return { calls, consumer };
}

/** Publishes with `id` as Nats-Msg-Id (a new event id unless given); null publishes without one. */
async function publish(subject: string, data: string, id: string | null = newId("msg")): Promise<string> {
  const ack = await js.publish(wireSubject(events.namespace, subject), Buffer.from(data), id ? { msgID: id } : {});
  expect(ack.duplicate).toBe(false);
  return id ?? "";
}

async function effects(subject: string): Promise<string[]> {
  const rows = await sql<{ eventId: string }[]>`select event_id from effects where subject = ${subject} order by data`;
  return rows.map((row) => row.eventId);
}

async function appliedIds(durable: string): Promise<string[]> {
  const rows = await sql<{ eventId: string }[]>`
    select event_id from applied_events where consumer = ${durable} order by applied_at, event_id`;
  return rows.map((row) => row.eventId);
}

/** Everything delivered so far has been acked or terminated, and nothing waits. */
async function settled(durable: string, delivered: number) {
  const info = await jsm.consumers.info(stream, durable);
  return info.delivered.consumer_seq >= delivered && info.num_ack_pending === 0 && info.num_pending === 0;
}

describe("startDurableConsumer", () => {
  it("applies an event once, in the transaction that records its id", async () => {
    const subject = "svc.applied.once";
    const { calls } = await consume(subject, "applied_once", () => undefined);
    const id = await publish(subject, "payload-1");

    await eventually("the effect", async () => (await effects(subject)).length > 0);
    await eventually("the message acked", () => settled("applied_once", 1));
    expect(calls).toEqual([{ id, subject, data: "payload-1" }]);
    expect(await effects(subject)).toEqual([id]);
    expect(await appliedIds("applied_once")).toEqual([id]);
  });

  it("acks a redelivered event without applying it again", async () => {
    const subject = "svc.applied.before";
    const durable = "applied_before";
    const already = newId("msg");
    // As if a previous delivery was applied and committed but its ack was lost.
    await sql`insert into applied_events (consumer, event_id) values (${durable}, ${already})`;
    const { calls } = await consume(subject, durable, () => undefined);

    await publish(subject, "a-already", already);
    const next = await publish(subject, "b-next");

    await eventually("the next event applied", async () => (await effects(subject)).includes(next));
    await eventually("both messages acked", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([next]);
    expect(await effects(subject)).toEqual([next]);
    expect((await appliedIds(durable)).sort()).toEqual([already, next].sort());
  });

  it("retries an event whose handler failed and applies it once in the end", async () => {
    const subject = "svc.applied.retried";
    const durable = "applied_retried";
    const { calls } = await consume(subject, durable, (_delivery, call) =>
      call === 1 ? new Error("transient failure after writing") : undefined,
    );
    const id = await publish(subject, "payload");

    await eventually("the effect", async () => (await effects(subject)).length > 0);
    await eventually("the message acked", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([id, id]);
    // The first attempt's row was rolled back with its transaction.
    expect(await effects(subject)).toEqual([id]);
    expect(await appliedIds(durable)).toEqual([id]);
  });

  it("terminates an undecodable event: no redelivery, no effect", async () => {
    const subject = "svc.applied.undecodable";
    const durable = "applied_undecodable";
    const { calls } = await consume(subject, durable, (delivery) =>
      delivery.data === "a-garbage" ? new UndecodableEvent("not a valid message") : undefined,
    );
    const garbage = await publish(subject, "a-garbage");
    const good = await publish(subject, "b-good");

    await eventually("the good event applied", async () => (await effects(subject)).includes(good));
    // A nak'ed message would stay pending until its redelivery, and fail again forever.
    await eventually("both messages settled", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([garbage, good]);
    expect(await effects(subject)).toEqual([good]);
    expect(await appliedIds(durable)).toEqual([good]);
  });

  it("terminates a message without Nats-Msg-Id without calling the handler", async () => {
    const subject = "svc.applied.anonymous";
    const durable = "applied_anonymous";
    const { calls } = await consume(subject, durable, () => undefined);
    await publish(subject, "a-anonymous", null);
    const good = await publish(subject, "b-good");

    await eventually("the good event applied", async () => (await effects(subject)).includes(good));
    await eventually("both messages settled", () => settled(durable, 2));
    expect(calls.map((call) => call.data)).toEqual(["b-good"]);
  });

  it("acks an event that changes nothing without calling the handler or recording its id", async () => {
    const subject = "svc.applied.nothing";
    const durable = "applied_nothing";
    const { calls } = await consume(
      subject,
      durable,
      () => undefined,
      (message) => Buffer.from(message.data).toString().startsWith("a-nothing"),
    );
    await publish(subject, "a-nothing");
    const good = await publish(subject, "b-good");

    await eventually("the good event applied", async () => (await effects(subject)).includes(good));
    await eventually("both messages acked", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([good]);
    expect(await appliedIds(durable)).toEqual([good]);
  });

  it("asks an asynchronous changesNothing (a database read) before any transaction", async () => {
    const subject = "svc.applied.nothing_async";
    const durable = "applied_nothing_async";
    await sql`insert into effects (event_id, subject, data) values ('marker', 'skip-list', ${Buffer.from("a-skip")})`;
    const { calls } = await consume(
      subject,
      durable,
      () => undefined,
      async (message) => {
        const data = Buffer.from(message.data);
        return (await sql`select 1 from effects where subject = 'skip-list' and data = ${data}`).length > 0;
      },
    );
    await publish(subject, "a-skip");
    const good = await publish(subject, "b-good");

    await eventually("the good event applied", async () => (await effects(subject)).includes(good));
    await eventually("both messages acked", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([good]);
    expect(await appliedIds(durable)).toEqual([good]);
  });

  it("terminates an event whose changesNothing cannot decode it", async () => {
    const subject = "svc.applied.undecodable_filter";
    const durable = "applied_undecodable_filter";
    const { calls } = await consume(
      subject,
      durable,
      () => undefined,
      (message) => {
        if (Buffer.from(message.data).toString() === "a-garbage") throw new UndecodableEvent("not a valid message");
        return false;
      },
    );
    await publish(subject, "a-garbage");
    const good = await publish(subject, "b-good");

    await eventually("the good event applied", async () => (await effects(subject)).includes(good));
    await eventually("both messages settled", () => settled(durable, 2));
    expect(calls.map((call) => call.id)).toEqual([good]);
  });

  it("stop() ends the loop; the durable resumes where it stopped", async () => {
    const subject = "svc.applied.stopped";
    const durable = "applied_stopped";
    const first = await consume(subject, durable, () => undefined);
    const before = await publish(subject, "a-before");
    await eventually("the first event applied", async () => (await effects(subject)).length === 1);
    await eventually("the first event acked", () => settled(durable, 1));

    // Resolves only once the loop has ended.
    await first.consumer.stop();
    consumers.splice(consumers.indexOf(first.consumer), 1);
    const after = await publish(subject, "b-after");

    const second = await consume(subject, durable, () => undefined);
    await eventually("the second event applied", async () => (await effects(subject)).length === 2);
    expect(first.calls.map((call) => call.id)).toEqual([before]);
    expect(second.calls.map((call) => call.id)).toEqual([after]);
    expect(await effects(subject)).toEqual([before, after]);
  });

  it("makes its durable again when the pull ends by itself (the durable deleted), and goes on applying", async () => {
    const subject = "svc.applied.recreated";
    const durable = "applied_recreated";
    await consume(subject, durable, () => undefined);
    const before = await publish(subject, "a-before");
    await eventually("the first event applied", async () => (await effects(subject)).length === 1);
    await eventually("the first event acked", () => settled(durable, 1));

    // As when the JetStream node that held a durable without replicas is lost.
    await jsm.consumers.delete(stream, durable);
    const after = await publish(subject, "b-after");
    await eventually("the durable made again", () =>
      jsm.consumers.info(stream, durable).then(
        () => true,
        () => false,
      ),
    );
    await eventually("the event after it applied", async () => (await effects(subject)).length === 2);
    expect(await effects(subject)).toEqual([before, after]);
  });

  it("applies up to `concurrency` events at once when asked, each once", async () => {
    const subject = "svc.applied.concurrently";
    let running = 0;
    let most = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const consumer = await startDurableConsumer({
      sql,
      js,
      jsm,
      stream,
      durable: "applied_concurrently",
      subject,
      namespace: events.namespace,
      logger: silentLogger,
      concurrency: 3,
      handle: async (tx, message) => {
        running += 1;
        most = Math.max(most, running);
        await tx`insert into effects (event_id, subject, data) values (${message.id}, ${message.subject}, ${Buffer.from(message.data)})`;
        await gate;
        running -= 1;
      },
    });
    consumers.push(consumer);
    const ids = [];
    for (const data of ["a", "b", "c", "d", "e"]) ids.push(await publish(subject, data));

    // Three handlers wait at the gate together; the others wait for room.
    await eventually("three events in flight", () => most === 3);
    release();
    await eventually("every event applied", async () => (await effects(subject)).length === ids.length);
    expect(most).toBe(3);
    expect((await effects(subject)).sort()).toEqual([...ids].sort());
    expect((await appliedIds("applied_concurrently")).sort()).toEqual([...ids].sort());
  });

  it("with concurrency, decides events beside those applied: a waiting decision holds no transaction's turn", async () => {
    const subject = "svc.decided.beside";
    let release: () => void = () => {};
    const decisionsWait = new Promise<void>((resolve) => {
      release = resolve;
    });
    let deciding = 0;
    const consumer = await startDurableConsumer({
      sql,
      js,
      jsm,
      stream,
      durable: "decided_beside",
      subject,
      namespace: events.namespace,
      logger: silentLogger,
      concurrency: 2,
      // Events "skip…" wait for their decision (as the notifier's wait for a heartbeat) and
      // change nothing; the others are applied at once.
      async changesNothing(message) {
        if (!Buffer.from(message.data).toString().startsWith("skip")) return false;
        deciding += 1;
        await decisionsWait;
        return true;
      },
      handle: async (tx, message) => {
        await tx`insert into effects (event_id, subject, data) values (${message.id}, ${message.subject}, ${Buffer.from(message.data)})`;
      },
    });
    consumers.push(consumer);
    const skipped = [];
    for (let i = 0; i < 5; i++) skipped.push(await publish(subject, `skip ${i}`));
    const applied = [await publish(subject, "apply 1"), await publish(subject, "apply 2")];

    // Five decisions wait, more than the two transactions' turns, and the later events are applied meanwhile.
    await eventually("the later events applied", async () => (await effects(subject)).length === 2);
    expect(deciding).toBe(5);
    expect((await effects(subject)).sort()).toEqual([...applied].sort());
    release();
    await eventually("every event settled", () => settled("decided_beside", 7));
    expect((await appliedIds("decided_beside")).sort()).toEqual([...applied].sort());
    expect(skipped).toHaveLength(5);
  });

  it("continues the producer's trace", async () => {
    // The SDK registers the tracer provider, W3C propagator and async context globally.
    const sdk = new NodeSDK({ spanProcessors: [new NoopSpanProcessor()] });
    sdk.start();
    try {
      const subject = "svc.applied.traced";
      const seen: (string | undefined)[] = [];
      const consumer = await startDurableConsumer({
        sql,
        js,
        jsm,
        stream,
        durable: "applied_traced",
        subject,
        namespace: events.namespace,
        logger: silentLogger,
        handle: async () => {
          seen.push(trace.getActiveSpan()?.spanContext().traceId);
        },
      });
      consumers.push(consumer);
      const traceId = "0af7651916cd43dd8448eb211c80319c";
      const hdrs = headers();
      hdrs.set("traceparent", `00-${traceId}-b7ad6b7169203331-01`);
      await js.publish(wireSubject(events.namespace, subject), Buffer.from("x"), {
        msgID: newId("msg"),
        headers: hdrs,
      });

      await eventually("the event handled", () => seen.length > 0);
      expect(seen).toEqual([traceId]);
    } finally {
      for (const consumer of consumers.splice(0)) await consumer.stop();
      await sdk.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    }
  });
});

describe("purgeAppliedEvents", () => {
  it("forgets ids older than the streams' retention plus a day, and keeps the rest", async () => {
    const consumer = "purge_test";
    const retentionS = appliedEventRetentionMs / 1000;
    const ages = {
      old: retentionS + 60,
      older: retentionS + 86_400,
      oldest: retentionS + 7 * 86_400,
      recent: retentionS - 60,
    };
    for (const [id, ageS] of Object.entries(ages)) {
      await sql`
        insert into applied_events (consumer, event_id, applied_at)
        values (${consumer}, ${id}, now() - make_interval(secs => ${ageS}))`;
    }
    // Batches of 2: the three old ids take two rounds.
    expect(await purgeAppliedEvents(sql, 2)).toBe(3);
    expect(await appliedIds(consumer)).toEqual(["recent"]);
    expect(await purgeAppliedEvents(sql, 2)).toBe(0);
  });
});
