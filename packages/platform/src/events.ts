import type { DomainEvent } from "@affiliate/proto/events";
import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  RetentionPolicy,
  StorageType,
} from "nats";
import type { Queryable } from "./db.js";
import { currentTraceHeaders } from "./tracing.js";

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

export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
}

/** How long a stream keeps an event: also how long a consumer must remember having applied it. */
export const streamRetentionMs = 7 * 24 * 3600 * 1000;

/**
 * Creates the service's stream if missing (with one replica), else brings its settings up to date
 * and keeps its replica count. Messages are kept for 7 days at most: long enough
 * for a consumer that was down to catch up, short enough that customer emails carried by
 * events do not linger (erasure also purges them).
 */
export async function ensureStream(jsm: JetStreamManager, name: EventStreamName): Promise<string> {
  const stream = streamName(name);
  const config = {
    name: stream,
    subjects: [wireSubject(name.namespace, `${name.service}.>`)],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: streamRetentionMs * 1e6,
    duplicate_window: 120 * 1e9,
  };
  try {
    const existing = await jsm.streams.info(stream);
    // Keeps the replica count an operator gave the stream (`nats stream edit <stream> --replicas 3`
    // on a clustered NATS, deploy/README.md): an update without one would scale it back to 1.
    await jsm.streams.update(stream, { ...config, num_replicas: existing.config.num_replicas });
  } catch {
    await jsm.streams.add(config);
  }
  return stream;
}

/**
 * Writes an event into the outbox of the transaction `tx`: it is published if and only if the
 * transaction commits. `event` comes from the registry in @affiliate/proto/events, which pairs
 * the subject ("partners.partnership.created") with the message the payload must be. Every event
 * message carries its own `id` (made with `newId("evt")`), which becomes the outbox key and the
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
}

/**
 * Writes many events of one type into the outbox of `tx` with one statement, as enqueueEvent
 * writes one: for a use case that changes many records at once (a payout generation's batch).
 * Their `seq` follows the order given. The outbox trigger notifies per statement, so the relay
 * is woken once for all of them.
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
}

export { AckPolicy, DeliverPolicy, type JetStreamClient, type JsMsg, type NatsConnection };
