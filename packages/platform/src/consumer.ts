import type { DomainEvent } from "@affiliate/proto/events";
import { type DescMessage, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import {
  AckPolicy,
  ConsumerEvents,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "nats";
import { Counter, Gauge } from "prom-client";
import type { Sql, TransactionSql } from "./db.js";
import { Deadline, withDeadline } from "./deadline.js";
import { domainSubject, streamRetentionMs, wireSubject } from "./events.js";
import type { Logger } from "./logger.js";
import { metricsRegistry, sampleOnScrape } from "./metrics.js";
import { retryStartup } from "./startup.js";
import { contextFromNatsHeaders, withConsumerSpan } from "./tracing.js";

/** A message that cannot be decoded: it is terminated, never redelivered. */
export class UndecodableEvent extends Error {}

/**
 * The payload of a consumed event as the message its type declares (@affiliate/proto/events);
 * UndecodableEvent when the bytes are not one, so the consumer terminates it.
 */
export function decodeEvent<Desc extends DescMessage>(event: DomainEvent<Desc>, data: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(event.schema, data);
  } catch (error) {
    throw new UndecodableEvent(`cannot decode ${event.subject} as ${event.schema.typeName}: ${String(error)}`);
  }
}

export interface DurableConsumerOptions {
  sql: Sql;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Stream of the producing service (streamName()). */
  stream: string;
  /** Durable name, unique per consuming service and purpose; also the applied-events scope. */
  durable: string;
  /** Domain subject filter: an event type's subject (ledgerEvents.commissionRefunded.subject). */
  subject: string;
  namespace: string;
  logger: Logger;
  /**
   * Applies the event inside `tx`, the transaction that also records the event id. Throw
   * UndecodableEvent for a message that can never be applied; any other error is retried.
   */
  handle(tx: TransactionSql, message: ConsumedEvent): Promise<void>;
  /**
   * True for an event that `handle` would apply as nothing: it is acked at once, without a
   * transaction or a recorded id (a redelivery is harmless, as it too changes nothing).
   * Saves the consumer's database a transaction, and its commit, for every event it has no use
   * for. It may ask the database (outside any transaction): what it reads decides as of now.
   */
  changesNothing?(message: ConsumedEvent): boolean | Promise<boolean>;
  /**
   * Events applied at once (default 1: one after another, in stream order). More gives up that
   * order, so only for a consumer whose effects do not depend on it and whose `handle` waits on
   * something slower than its own database (the notifier asks other services per event). Such
   * a consumer also decides `changesNothing` for up to `decidingAtOnce` events beside them: a
   * decision that waits (the notifier's on a heartbeat) then holds no transaction's turn.
   */
  concurrency?: number;
}

export interface ConsumedEvent {
  id: string;
  subject: string;
  data: Uint8Array;
}

export interface DurableConsumer {
  stop(): Promise<void>;
}

const retryDelaysMs = [1000, 5000, 15_000, 60_000];

/**
 * How long a delivery's decision, and then its transaction, may take (the calls it makes to other
 * services included, which inherit the deadline): far less than the consumer's 30 s ack wait, so
 * an attempt stuck on a database that stopped answering is given up and the event nak'ed, rather
 * than left until JetStream hands it out again.
 */
const applyWithinMs = 10_000;

/**
 * Runs a step of a delivery (its decision, then its transaction once it has its turn) under a
 * deadline, like an RPC: a statement that a frozen database never answers gives its connection
 * up (db.ts), and the event is nak'ed and tried again.
 */
const withinApplyDeadline = <T>(step: () => T): T => withDeadline(Deadline.in(applyWithinMs), step);

/** Messages pulled at once; with `concurrency` > 1, also how many may be held deciding or applying. */
const decidingAtOnce = 64;

/** At most `size` holders at once; the others wait their turn in arrival order. */
function turns(size: number) {
  let free = size;
  const queue: (() => void)[] = [];
  return {
    async take(): Promise<void> {
      if (free > 0) {
        free -= 1;
        return;
      }
      await new Promise<void>((resolve) => queue.push(resolve));
    },
    give(): void {
      const next = queue.shift();
      if (next) next();
      else free += 1;
    },
  };
}

const registers = [metricsRegistry];
const pending = new Gauge({
  name: "consumer_pending_events",
  help: "Events in the stream not yet delivered to the durable consumer (its lag).",
  labelNames: ["durable"],
  registers,
});
const unacknowledged = new Gauge({
  name: "consumer_unacknowledged_events",
  help: "Events delivered to the durable consumer and not yet acknowledged (in progress or awaiting redelivery).",
  labelNames: ["durable"],
  registers,
});
const outcomes = new Counter({
  name: "consumer_events_total",
  help: "Deliveries handled by this process, by outcome: applied, duplicate (already applied), skipped (changes nothing), retried (nak), terminated (undecodable).",
  labelNames: ["durable", "outcome"],
  registers,
});
const redeliveries = new Counter({
  name: "consumer_redeliveries_total",
  help: "Deliveries that were redeliveries (after a nak, an expired ack wait or a crash).",
  labelNames: ["durable"],
  registers,
});

/**
 * Consumes a subject with a durable, explicitly acked JetStream consumer and applies each event
 * exactly once: the event id (Nats-Msg-Id) is recorded in `applied_events` in the transaction
 * of the effect, a redelivery of an applied event is acked without effect, and the ack follows
 * the commit. Transient failures are nak'ed with a growing delay.
 */
export async function startDurableConsumer(options: DurableConsumerOptions): Promise<DurableConsumer> {
  const { sql, js, jsm, stream, durable, namespace, logger } = options;
  // Both idempotent: a TIMEOUT of a busy JetStream at start is tried again, not a crash.
  const open = (what: string) =>
    retryStartup(logger, `${what} consumer ${durable}`, async () => {
      await jsm.consumers.add(stream, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: wireSubject(namespace, options.subject),
        ack_wait: 30 * 1e9,
        max_deliver: -1,
      });
      const consumer = await js.consumers.get(stream, durable);
      // Pulls renewed every 5 s (heartbeats every 2.5 s) rather than JetStream's 30 s: when the node
      // leading the consumer is lost, a pull it held is renewed with the new leader within seconds.
      // A durable found missing ends the pull (nats.js would otherwise wait for someone else to
      // make it again, and consume nothing meanwhile): the loop below makes it again.
      return consumer.consume({ max_messages: decidingAtOnce, expires: 5000, abort_on_missing_resource: true });
    });
  let messages = await open("starting");
  let stopping = false;
  const stopSampling = sampleOnScrape(`consumer ${durable}`, async () => {
    const info = await jsm.consumers.info(stream, durable);
    pending.set({ durable }, info.num_pending);
    unacknowledged.set({ durable }, info.num_ack_pending);
  });

  const concurrency = options.concurrency ?? 1;
  // In stream order (1), an event is decided only after the one before it was applied: its
  // decision may read what that one changed.
  const held = concurrency > 1 ? Math.max(concurrency, decidingAtOnce) : 1;
  const transactions = turns(concurrency);

  const apply = async (msg: JsMsg) => {
    if (msg.info.redelivered) redeliveries.inc({ durable });
    const id = msg.headers?.get("Nats-Msg-Id") ?? "";
    if (!id) {
      logger.error({ subject: msg.subject, seq: msg.seq }, "event without Nats-Msg-Id; terminated");
      msg.term();
      outcomes.inc({ durable, outcome: "terminated" });
      return;
    }
    const event = { id, subject: domainSubject(namespace, msg.subject), data: msg.data };
    const attributes = {
      "messaging.system": "nats",
      "messaging.operation.type": "process",
      "messaging.destination.name": msg.subject,
      "messaging.consumer.group.name": durable,
      "messaging.message.id": id,
    };
    try {
      // The span covers an event acked without effect too: the trace shows it arrived here.
      const outcome = await withConsumerSpan(
        `process ${options.subject}`,
        contextFromNatsHeaders(msg.headers),
        async () => {
          if (await withinApplyDeadline(() => options.changesNothing?.(event))) return "skipped";
          await transactions.take();
          try {
            return await withinApplyDeadline(() =>
              sql.begin(async (tx) => {
                const [fresh] = await tx`
                  insert into applied_events (consumer, event_id) values (${durable}, ${id})
                  on conflict do nothing returning event_id`;
                if (!fresh) return "duplicate";
                await options.handle(tx, event);
                return "applied";
              }),
            );
          } finally {
            transactions.give();
          }
        },
        attributes,
      );
      msg.ack();
      outcomes.inc({ durable, outcome });
    } catch (error) {
      if (error instanceof UndecodableEvent) {
        logger.error({ err: error, eventId: id }, "undecodable event; terminated");
        msg.term();
        outcomes.inc({ durable, outcome: "terminated" });
        return;
      }
      const delay = retryDelaysMs[Math.min(msg.info.redeliveryCount - 1, retryDelaysMs.length - 1)] ?? 1000;
      logger.warn({ err: error, eventId: id, retryInMs: delay }, "event not applied; will retry");
      msg.nak(delay);
      outcomes.inc({ durable, outcome: "retried" });
    }
  };

  const loop = (async () => {
    for (;;) {
      const inFlight = new Set<Promise<void>>();
      let ended: unknown;
      try {
        for await (const msg of messages) {
          const applying: Promise<void> = apply(msg).finally(() => inFlight.delete(applying));
          inFlight.add(applying);
          if (inFlight.size >= held) await Promise.race(inFlight);
        }
      } catch (error) {
        ended = error;
      }
      await Promise.all(inFlight);
      if (stopping) return;
      // The pull ended without stop(): the durable is gone (deleted, or lost with the JetStream
      // node that held it without replicas). Left alone, the service would run on and consume
      // nothing; the durable is made again and resumes from the stream's start, which
      // applied_events turns into acks of what was applied.
      logger.error({ err: ended, durable }, "the consumer's pull ended by itself; making the durable again");
      messages = await open("restarting");
      if (stopping) messages.stop();
    }
  })();

  return {
    async stop() {
      stopping = true;
      stopSampling();
      messages.stop();
      await loop;
      pending.remove({ durable });
      unacknowledged.remove({ durable });
    },
  };
}

/**
 * How long an applied event's id is remembered. An event can only be delivered again while its
 * stream holds it (even a durable recreated from scratch replays no further back), so a day past
 * the stream's retention is enough to recognise every redelivery.
 */
export const appliedEventRetentionMs = streamRetentionMs + 24 * 3600 * 1000;

/**
 * Forgets applied event ids older than appliedEventRetentionMs, in batches so no statement holds
 * many row locks for long; run periodically. Returns how many it deleted.
 */
export async function purgeAppliedEvents(sql: Sql, batchSize = 5000): Promise<number> {
  let purged = 0;
  for (;;) {
    const rows = await sql`
      delete from applied_events where ctid in (
        select ctid from applied_events
        where applied_at < now() - make_interval(secs => ${appliedEventRetentionMs / 1000})
        limit ${batchSize})
      returning event_id`;
    purged += rows.length;
    if (rows.length < batchSize) return purged;
  }
}

export interface FollowOptions {
  js: JetStreamClient;
  stream: string;
  /** Domain subject filter. */
  subject: string;
  namespace: string;
  logger: Logger;
  handle(message: { subject: string; data: Uint8Array }): void;
  /**
   * Called when the consumer has gone silent: no event and no heartbeat from the server for about
   * `followHeartbeatMs` twice. It happens when the NATS node holding the (memory, one-replica)
   * consumer is lost while the connection stays with another node, and nothing else would tell:
   * events would stop arriving without a disconnect.
   */
  onSilent?(): void;
}

/**
 * How often the server proves an idle follow alive (JetStream idle heartbeats). Two missed in a
 * row make onSilent: about a second, so a cache kept by a follow stops trusting itself well
 * within the 2 s a rotated key may still pass.
 */
export const followHeartbeatMs = 500;

/** A running follow of a subject. */
export interface Follow {
  stop(): Promise<void>;
  /**
   * Resolves when the follow has ended, whether stop() ended it or the consumer stopped by itself
   * (a cache trusting the follow must stop trusting it then).
   */
  ended: Promise<void>;
}

/**
 * Follows a subject from now on with an ordered (ephemeral) consumer: every process hears every
 * event, and nothing is stored about it. For caches that each replica keeps, such as the
 * gateway's key cache.
 */
export async function followEvents(options: FollowOptions): Promise<Follow> {
  const consumer = await options.js.consumers.get(options.stream, {
    filterSubjects: wireSubject(options.namespace, options.subject),
    deliver_policy: DeliverPolicy.New,
  });
  // Each pull lasts 2 heartbeats, the shortest JetStream takes.
  const messages = await consumer.consume({ expires: 2 * followHeartbeatMs, idle_heartbeat: followHeartbeatMs });
  void (async () => {
    for await (const status of await messages.status()) {
      if (status.type === ConsumerEvents.HeartbeatsMissed) options.onSilent?.();
    }
  })().catch(() => undefined);
  const ended = (async () => {
    for await (const msg of messages) {
      try {
        options.handle({ subject: domainSubject(options.namespace, msg.subject), data: msg.data });
      } catch (error) {
        options.logger.error({ err: error, subject: msg.subject }, "event handler failed");
      }
    }
  })().catch((error: unknown) => options.logger.warn({ err: error, subject: options.subject }, "event follow failed"));
  return {
    async stop() {
      messages.stop();
      await ended;
    },
    ended,
  };
}
