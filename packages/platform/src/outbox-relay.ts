import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "nats";
import { Counter, Gauge } from "prom-client";
import type { Sql } from "./db.js";
import { Deadline, withDeadline } from "./deadline.js";
import { wireSubject } from "./events.js";
import type { Logger } from "./logger.js";
import { metricsRegistry, sampleOnScrape } from "./metrics.js";
import { withPublishSpan } from "./tracing.js";
import { onWake } from "./wakeups.js";

export interface OutboxRelayOptions {
  sql: Sql;
  /** The connection it publishes on (to JetStream, acknowledged on an inbox of its own). */
  nats: NatsConnection;
  /**
   * The service's schema: this process's commits that write its outbox wake the relay
   * (wakeups.ts), and a NOTIFY on `<schema>_outbox` (by hand, or a tool) does too.
   */
  schema: string;
  namespace: string;
  logger: Logger;
  /** Poll interval when no wake-up comes (work another replica committed waits at most this). */
  pollMs?: number;
  batchSize?: number;
  /** How long a batch waits for the stream's acknowledgements before it is retried (default 5 s). */
  ackTimeoutMs?: number;
}

export interface OutboxRelay {
  /** Publishes what is due now; resolves with the number of events published. */
  flush(): Promise<number>;
  /** Stops after the batch in flight, publishing what is already due first. */
  stop(): Promise<void>;
}

/** A batch's time for its database statements, besides the wait for the stream's acknowledgements. */
const databaseMarginMs = 5000;

const registers = [metricsRegistry];
const backlog = new Gauge({
  name: "outbox_backlog_events",
  help: "Events committed but not yet published to JetStream.",
  labelNames: ["schema"],
  registers,
});
const oldestAge = new Gauge({
  name: "outbox_oldest_event_age_seconds",
  help: "Age of the oldest unpublished event (0 when the outbox is empty): how late consumers hear of changes.",
  labelNames: ["schema"],
  registers,
});
const published = new Counter({
  name: "outbox_published_events_total",
  help: "Events this process published from the outbox.",
  labelNames: ["schema"],
  registers,
});
const publishFailures = new Counter({
  name: "outbox_publish_failures_total",
  help: "Publish batches that failed (NATS or the database unavailable); the rows stay and are retried.",
  labelNames: ["schema"],
  registers,
});

/** Samples the outbox's backlog and the age of its oldest row at every scrape. */
export function observeOutbox(sql: Sql, schema: string): () => void {
  const unregister = sampleOnScrape(`outbox ${schema}`, async () => {
    const [row] = await sql<{ events: number; oldestSeconds: number }[]>`
      select count(*)::int as events,
             coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_seconds
      from outbox`;
    backlog.set({ schema }, row?.events ?? 0);
    oldestAge.set({ schema }, Math.max(0, row?.oldestSeconds ?? 0));
  });
  return () => {
    unregister();
    backlog.remove({ schema });
    oldestAge.remove({ schema });
  };
}

/** A JetStream publish acknowledgement (`{ stream, seq, duplicate? }`), or its refusal. */
interface PubAck {
  error?: { code: number; description: string };
}

/**
 * Publishes to JetStream as `js.publish` does (a message with `Nats-Msg-Id`, answered by the
 * stream with an acknowledgement), but with every acknowledgement coming to one inbox
 * subscription of the relay's: `js.publish` is a request per message, with its own timer and
 * two errors made with their stacks (for the timeout, and when the answer cancels it). On this
 * machine that is 90-125 µs of CPU per message against 17-19 µs here (20,000 publishes in
 * batches of 200, pipelined either way).
 */
function jetStreamPublisher(nats: NatsConnection) {
  const inbox = createInbox();
  const waiting = new Map<string, { resolve(): void; reject(error: Error): void }>();
  let sent = 0;
  const decoder = new TextDecoder();
  const answered = (_error: unknown, msg: Msg) => {
    const token = msg.subject.slice(inbox.length + 1);
    const waiter = waiting.get(token);
    if (!waiter) return; // answered after its batch gave up: the batch is retried anyway
    waiting.delete(token);
    // No stream for the subject: the server answers "no responders" (503), without a body.
    if (msg.headers?.code === 503 || msg.data.length === 0) {
      waiter.reject(new Error(`no stream answered the publish to ${msg.subject}`));
      return;
    }
    const ack = JSON.parse(decoder.decode(msg.data)) as PubAck;
    if (ack.error) waiter.reject(new Error(`the stream refused the publish: ${ack.error.description}`));
    else waiter.resolve();
  };
  // Subscribed at the first publish (a closed connection then fails that batch, not the start).
  let subscription: Subscription | undefined;
  return {
    /**
     * Publishes one message now (messages published one after another keep their order in the
     * stream); resolves when the stream acknowledged it. `token` names it to `giveUp`.
     */
    publish(message: { subject: string; payload: Uint8Array; id: string; headers: MsgHdrs }) {
      subscription ??= nats.subscribe(`${inbox}.*`, { callback: answered });
      const token = String(++sent);
      const acknowledged = new Promise<void>((resolve, reject) => waiting.set(token, { resolve, reject }));
      message.headers.set("Nats-Msg-Id", message.id);
      nats.publish(message.subject, message.payload, { reply: `${inbox}.${token}`, headers: message.headers });
      return { token, acknowledged };
    },
    /** Rejects the publishes still unacknowledged among `tokens`; a late answer is then ignored. */
    giveUp(tokens: string[], error: Error): void {
      for (const token of tokens) {
        waiting.get(token)?.reject(error);
        waiting.delete(token);
      }
    },
    close(): void {
      subscription?.unsubscribe();
    },
  };
}

/**
 * Publishes outbox rows to JetStream in commit order, with the event id as `Nats-Msg-Id` so the
 * stream drops a re-publish after a crash between publish and delete. Rows are locked with SKIP
 * LOCKED, so several replicas can relay the same outbox. A batch's publishes are sent one after
 * another without waiting (the stream keeps their order) and its rows are deleted once the stream
 * acknowledged every one. If NATS is down or the stream refuses one, the transaction rolls back,
 * the rows stay, and the relay retries with back-off: nothing is lost, and what the failed
 * attempt did publish is dropped by the stream as a duplicate of its id when it is published again.
 */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { sql, schema, namespace, logger } = options;
  const pollMs = options.pollMs ?? 1000;
  const batchSize = options.batchSize ?? 200;
  const ackTimeoutMs = options.ackTimeoutMs ?? 5000;
  const publisher = jetStreamPublisher(options.nats);
  let stopped = false;
  let wake: (() => void) | undefined;
  // Set by a wake-up; one that arrives during a flush makes the next sleep return at once
  // instead of being lost.
  let notified = false;
  let failures = 0;
  const stopObserving = observeOutbox(sql, schema);

  // Taken by one DELETE … RETURNING in the transaction that publishes: if a publish fails, the
  // transaction rolls back and the rows are there again. RETURNING keeps no order, so the rows
  // are sorted by seq before publishing.
  const publishBatchNow = () =>
    sql.begin(async (tx) => {
      const rows = await tx<
        { id: string; seq: number; subject: string; payload: Buffer; headers: Record<string, string> }[]
      >`
        delete from outbox where id in (
          select id from outbox order by seq limit ${batchSize} for update skip locked)
        returning id, seq, subject, payload, headers`;
      if (rows.length === 0) return 0;
      rows.sort((a, b) => a.seq - b.seq);
      // Each publish runs in a span of the trace that wrote its row, whose context the message
      // carries on; all are sent before any acknowledgement is awaited.
      const tokens: string[] = [];
      const timer = setTimeout(
        () => publisher.giveUp(tokens, new Error(`no acknowledgement from the stream in ${ackTimeoutMs} ms`)),
        ackTimeoutMs,
      );
      try {
        await Promise.all(
          rows.map((row) => {
            const subject = wireSubject(namespace, row.subject);
            return withPublishSpan(subject, row.id, row.headers, (headers) => {
              const sent = publisher.publish({ subject, payload: row.payload, id: row.id, headers });
              tokens.push(sent.token);
              return sent.acknowledged;
            });
          }),
        );
      } finally {
        clearTimeout(timer);
        // One refusal fails the batch: the others are not waited for (their answers are ignored).
        publisher.giveUp(tokens, new Error("another publish of the batch failed"));
      }
      return rows.length;
    });
  // Under a deadline (the stream's acknowledgements and a margin for the database), so that a
  // batch stuck on a database that stopped answering gives its connection up (db.ts) and the
  // relay tries again, on a connection to the primary of the moment.
  const publishBatch = () => withDeadline(Deadline.in(ackTimeoutMs + databaseMarginMs), publishBatchNow);

  const flush = async () => {
    let total = 0;
    for (;;) {
      const count = await publishBatch();
      published.inc({ schema }, count);
      total += count;
      if (count < batchSize) return total;
    }
  };

  // After a failure only stop() cuts the back-off short: commits arriving while NATS is down
  // must not turn the back-off into a retry per commit.
  const sleep = (ms: number, wakeOnNotify = true) =>
    new Promise<void>((resolve) => {
      if ((wakeOnNotify && notified) || stopped) return resolve();
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = wakeOnNotify ? done : () => stopped && done();
    });
  const onNotify = () => {
    notified = true;
    wake?.();
  };

  const stopWaking = onWake(schema, "outbox", onNotify);
  const listening = sql.listen(`${schema}_outbox`, onNotify).catch((error: unknown) => {
    logger.warn({ err: error }, "outbox relay could not LISTEN; falling back to polling");
    return undefined;
  });

  const loop = (async () => {
    while (!stopped) {
      try {
        notified = false;
        await flush();
        failures = 0;
        await sleep(pollMs);
      } catch (error) {
        failures += 1;
        publishFailures.inc({ schema });
        const backoff = Math.min(pollMs * 2 ** failures, 30_000);
        logger.warn({ err: error, retryInMs: backoff }, "outbox relay failed to publish; will retry");
        await sleep(backoff, false);
      }
    }
  })();

  return {
    flush,
    async stop() {
      stopped = true;
      stopObserving();
      stopWaking();
      onNotify();
      await loop;
      await (await listening)?.unlisten();
      try {
        await flush();
      } catch (error) {
        logger.warn({ err: error }, "outbox relay could not flush on shutdown; rows stay for the next start");
      }
      publisher.close();
    },
  };
}
