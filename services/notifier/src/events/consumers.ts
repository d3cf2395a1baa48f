import {
  type DurableConsumer,
  type JetStreamClient,
  type Logger,
  type Sql,
  startDurableConsumer,
  streamName,
} from "@affiliate/platform";
import type { JetStreamManager } from "nats";
import { recordEvent, wantsEvent } from "../domain/record-event.js";
import type { Owners } from "./owners.js";
import { subscriptions } from "./payloads.js";

/**
 * Events of one subject recorded at once. Each asks the ledger and partners for its payload, so
 * one after another a subject could record only as fast as those round trips allow (bench J:
 * seconds behind at 30 events/s on a busy machine); nothing the notifier records depends on the
 * order of events (each is its own delivery and email). Each one holds a pool connection while
 * it asks, so this stays below the pool's size.
 */
export const eventsAtOnce = 8;

/**
 * One durable consumer per subscribed subject (durable `notifier_<subject>`). A handler only
 * records, in the transaction that marks the event applied: a redelivery records nothing twice,
 * and a crash before the commit leaves the event to be redelivered. An event no endpoint
 * listens to and that sends no email asks no owner anything.
 */
export async function startConsumers(options: {
  sql: Sql;
  js: JetStreamClient;
  jsm: JetStreamManager;
  namespace: string;
  logger: Logger;
  owners: Owners;
  clock: () => Date;
}): Promise<DurableConsumer[]> {
  const { owners, clock } = options;
  return Promise.all(
    subscriptions.map((subscription) =>
      startDurableConsumer({
        ...options,
        stream: streamName({ service: subscription.stream, namespace: options.namespace }),
        durable: `notifier_${subscription.subject.replaceAll(".", "_")}`,
        subject: subscription.subject,
        concurrency: eventsAtOnce,
        async handle(tx, message) {
          const { productId, sendsEmail } = subscription.peek(message.data);
          if (!sendsEmail && !(await wantsEvent(tx, productId, subscription.type))) return;
          const event = await subscription.build(owners, message.id, message.data);
          await recordEvent(tx, event, clock());
        },
      }),
    ),
  );
}
