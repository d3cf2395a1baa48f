import type { ReceivedEvent } from "../../domain/types.js";
import { stripeClient } from "./client.js";
import { handledEventTypes } from "./map-event.js";
import { receivedEventOf } from "./verify.js";

/**
 * Stripe's events API (`GET /v1/events`) through Stripe's own client, for reconciliation: every
 * event of the handled types created since `since`, as a delivery would have brought it.
 * `apiBase` points it at another address (tests use a local fake).
 */
export async function* stripeEventsSince(options: {
  apiBase: string;
  apiKey: string;
  since: Date;
  timeoutMs: number;
}): AsyncGenerator<ReceivedEvent> {
  const stripe = stripeClient(options);
  const events = stripe.events.list({
    types: [...handledEventTypes],
    created: { gte: Math.floor(options.since.getTime() / 1000) },
    limit: 100,
  });
  for await (const event of events) yield receivedEventOf(event, JSON.stringify(event));
}
