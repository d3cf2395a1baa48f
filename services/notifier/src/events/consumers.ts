import {
  type DurableConsumer,
  type JetStreamClient,
  type Logger,
  type Sql,
  startDurableConsumer,
  streamName,
} from "@affiliate/platform";
import type { JetStreamManager } from "nats";
import { recordEvent } from "../domain/record-event.js";
import type { Listeners } from "./listeners.js";
import type { Owners } from "./owners.js";
import { type EmailSettings, subscriptions } from "./payloads.js";

/**
 * Events of one subject recorded at once. Each asks the ledger and partners for its payload, so
 * one after another a subject could record only as fast as those round trips allow (bench J:
 * seconds behind at 30 events/s on a busy machine); nothing the notifier records depends on the
 * order of events (each is its own delivery and email). Each one holds a pool connection while
 * it asks, so this stays below the pool's size.
 */
export const eventsAtOnce = 8;

/** The notifier's durable consumer of a subject: `notifier_<subject>`. */
export function durableFor(subject: string): string {
  return `notifier_${subject.replaceAll(".", "_")}`;
}

/**
 * One durable consumer per subscribed subject (durable `notifier_<subject>`). A handler only
 * records, in the transaction that marks the event applied: a redelivery records nothing twice,
 * and a crash before the commit leaves the event to be redelivered. An event no endpoint
 * listens to and that sends no email asks no owner anything and is acked without a transaction
 * (and, while the index of listeners follows its feed, without a query).
 */
export async function startConsumers(options: {
  sql: Sql;
  js: JetStreamClient;
  jsm: JetStreamManager;
  namespace: string;
  logger: Logger;
  owners: Owners;
  /** Which products listen to which event types (listeners.ts). */
  listeners: Listeners;
  clock: () => Date;
  /** What emails link to (PORTAL_URL); no links when absent. */
  emailSettings?: EmailSettings;
}): Promise<DurableConsumer[]> {
  const { owners, listeners, clock } = options;
  const settings = options.emailSettings ?? { portalUrl: undefined };
  return Promise.all(
    subscriptions.map((subscription) =>
      startDurableConsumer({
        ...options,
        stream: streamName({ service: subscription.stream, namespace: options.namespace }),
        durable: durableFor(subscription.subject),
        subject: subscription.subject,
        concurrency: eventsAtOnce,
        // Most events of a busy product reach no endpoint and send no email: the index of
        // listeners decides without a query, and such an event costs no transaction at all.
        async changesNothing(message) {
          const { productId, sendsEmail } = subscription.peek(message.data);
          if (sendsEmail) return false;
          return subscription.type === null || !(await listeners.listens(productId, subscription.type));
        },
        async handle(tx, message) {
          const event = await subscription.build(owners, message.id, message.data, settings);
          await recordEvent(tx, event, clock());
        },
      }),
    ),
  );
}
