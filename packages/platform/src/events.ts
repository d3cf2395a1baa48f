import type { DomainEvent } from "@affiliate/proto/events";
import { create, type DescMessage, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { type Timestamp, timestampNow } from "@bufbuild/protobuf/wkt";
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  NatsError,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from "nats";
import type { Queryable } from "./db.js";
import { newId } from "./ids.js";
import type { Logger } from "./logger.js";
import { currentTraceHeaders } from "./tracing.js";
import { wakeAfterCommit } from "./wakeups.js";

/** Where a service's events live: one stream per owning service, subjects `<service>.>`. */
export interface EventStreamName {
  /** The owning service, e.g. "partners". */
  service: string;
  /** EVENTS_NAMESPACE; empty in production. */
  namespace: string;
}

export function streamName({ service, namespace }: EventStreamName): string {
  return `${namespace ? `${namespace.toUpperCase()}_` : ""}${service.toUpperCase()}`;
}

/** The wire subject of a domain subject such as "partners.partnership.created". */
export function wireSubject(namespace: string, subject: string): string {
  return namespace ? `${namespace}.${subject}` : subject;
}

/** The domain subject of a wire subject (the inverse of wireSubject). */
export function domainSubject(namespace: string, subject: string): string {
  return namespace && subject.startsWith(`${namespace}.`) ? subject.slice(namespace.length + 1) : subject;
}

/**
 * Connects to NATS at `url`: one server, or several of one cluster separated by commas. The
 * connection learns the cluster's other members from the server it reaches, and after losing a
 * server reconnects to another one (taken at random, so replicas spread over the nodes), for as
 * long as the process runs.
 */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(",").map((server) => server.trim()),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A node that froze (half-open: its socket stays open and answers nothing) is left for
    // another after two unanswered pings, 10-15 s, not nats.js's default of 2 minutes x 2.
    pingInterval: 5000,
    maxPingOut: 2,
  });
}

/** How long a stream keeps an event: also how long a consumer must remember having applied it. */
export const streamRetentionMs = 7 * 24 * 3600 * 1000;

export interface EnsureStreamOptions {
  /** Replicas of a stream created now (EVENTS_REPLICAS); default 1. */
  replicas?: number;
  /** Told when the existing stream keeps fewer replicas than asked. */
  logger?: Pick<Logger, "warn">;
}

/**
 * Creates the service's stream if missing (with `replicas` replicas, on that many nodes of a
 * clustered NATS), else brings its settings up to date and keeps its replica count: a stream with
 * fewer replicas than asked is left as it is, with a warning saying so and how to raise it (a
 * change of placement is the operator's to make, at a quiet moment). Messages are kept for 7 days
 * at most: long enough for a consumer that was down to catch up, short enough that customer emails
 * carried by events do not linger (erasure also purges them).
 */
export async function ensureStream(
  jsm: JetStreamManager,
  name: EventStreamName,
  options: EnsureStreamOptions = {},
): Promise<string> {
  const stream = streamName(name);
  const replicas = options.replicas ?? 1;
  const config = {
    name: stream,
    subjects: [wireSubject(name.namespace, `${name.service}.>`)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: streamRetentionMs * 1e6,
    duplicate_window: 120 * 1e9,
  };
  let existing: StreamInfo | undefined;
  try {
    existing = await jsm.streams.info(stream);
  } catch (error) {
    if (!(error instanceof NatsError && error.api_error?.err_code === streamNotFound)) throw error;
  }
  if (!existing) {
    try {
      await jsm.streams.add({ ...config, num_replicas: replicas });
      return stream;
    } catch (error) {
      // Another service (or replica) created it meanwhile: bring it up to date below.
      existing = await jsm.streams.info(stream).catch(() => {
        throw error;
      });
    }
  }
  const kept = existing.config.num_replicas;
  if (kept < replicas) {
    options.logger?.warn(
      { stream, replicas: kept, wanted: replicas },
      `stream ${stream} has ${kept} replica(s), fewer than EVENTS_REPLICAS=${replicas}: a lost NATS node can lose its events; raise it with \`nats stream edit ${stream} --replicas ${replicas}\``,
    );
  }
  // An update without num_replicas would scale the stream back to 1.
  await jsm.streams.update(stream, { ...config, num_replicas: kept });
  return stream;
}

/** JetStream's error code for "stream not found". */
const streamNotFound = 10059;

/**
 * Writes an event into the outbox of the transaction `tx`: it is published if and only if the
 * transaction commits. `event` comes from the registry in @affiliate/proto/events, which pairs
 * the subject ("partners.partnership.created") with the message the payload must be. Every event
 * message carries its own `id` (made with `newId("msg")`), which becomes the outbox key and the
 * `Nats-Msg-Id`.
 */
export async function enqueueEvent<Desc extends DescMessage>(
  tx: Queryable,
  event: DomainEvent<Desc>,
  message: MessageShape<Desc> & { id: string },
): Promise<void> {
  const { id } = message;
  const bytes = toBinary(event.schema, message);
  await tx`
    insert into outbox (id, subject, payload, headers)
    values (${id}, ${event.subject}, ${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)},
            ${tx.json(currentTraceHeaders())})`;
  wakeAfterCommit("outbox");
}

/**
 * Writes many events of one type into the outbox of `tx` with one statement, as enqueueEvent
 * writes one: for a use case that changes many records at once (a payout generation's batch).
 * Their `seq` follows the order given. The relay is woken once for all of them, after the commit.
 */
export async function enqueueEvents<Desc extends DescMessage>(
  tx: Queryable,
  event: DomainEvent<Desc>,
  messages: (MessageShape<Desc> & { id: string })[],
  /**
   * The trace each message continues, by position, when they were caused by different calls (a
   * batch of several requests' work); a missing one takes the current trace, as enqueueEvent does.
   */
  traces: (Record<string, string> | undefined)[] = [],
): Promise<void> {
  if (messages.length === 0) return;
  const ids = messages.map((message) => message.id);
  const current = currentTraceHeaders();
  const headers = messages.map((_, i) => JSON.stringify(traces[i] ?? current));
  // As base64 text: postgres.js binds a bytea[] parameter only once the pool knows its array types.
  const payloads = messages.map((message) => {
    const bytes = toBinary(event.schema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  });
  await tx`
    insert into outbox (id, subject, payload, headers)
    select item.id, ${event.subject}, decode(item.payload, 'base64'), item.headers::jsonb
    from unnest(${ids}::text[], ${payloads}::text[], ${headers}::text[])
      with ordinality as item(id, payload, headers, position)
    order by item.position`;
  wakeAfterCommit("outbox");
}

/** The envelope every domain event message opens with (fields 1 and 2 of each events.proto message). */
interface EventEnvelope {
  id: string;
  occurredAt?: Timestamp | undefined;
}

/** A domain event message's own fields: all but the envelope, which enqueueDomainEvent fills. */
export type EventFields<Desc extends DescMessage> = Omit<MessageInitShape<Desc>, "$typeName" | keyof EventEnvelope>;

/** The message of `event` with its envelope: a new `msg_` id and `occurredAt`. */
function withEnvelope<Desc extends DescMessage>(
  event: DomainEvent<Desc>,
  fields: EventFields<Desc>,
  occurredAt: Timestamp,
): MessageShape<Desc> & EventEnvelope {
  // Every registry message has the envelope (the registry's test checks it); TypeScript cannot
  // see that through a generic message type.
  const init = { ...fields, id: newId("msg"), occurredAt } as unknown as MessageInitShape<Desc>;
  return create(event.schema, init) as MessageShape<Desc> & EventEnvelope;
}

/**
 * Writes a domain event into the outbox of `tx` (enqueueEvent) with its envelope made here: a new
 * `msg_` id, which is also its outbox key and `Nats-Msg-Id`, and the time now. The caller gives
 * only what the event says.
 */
export function enqueueDomainEvent<Desc extends DescMessage>(
  tx: Queryable,
  event: DomainEvent<Desc>,
  fields: EventFields<Desc>,
): Promise<void> {
  return enqueueEvent(tx, event, withEnvelope(event, fields, timestampNow()));
}

/**
 * Writes many domain events of one type into the outbox of `tx` with one statement
 * (enqueueEvents), each with its own `msg_` id and all with the same `occurredAt`.
 */
export function enqueueDomainEvents<Desc extends DescMessage>(
  tx: Queryable,
  event: DomainEvent<Desc>,
  fields: EventFields<Desc>[],
  /** The trace each event continues, by position (see enqueueEvents). */
  traces: (Record<string, string> | undefined)[] = [],
): Promise<void> {
  const occurredAt = timestampNow();
  return enqueueEvents(
    tx,
    event,
    fields.map((one) => withEnvelope(event, one, occurredAt)),
    traces,
  );
}

export { AckPolicy, DeliverPolicy, type JetStreamClient, type JsMsg, type NatsConnection };
