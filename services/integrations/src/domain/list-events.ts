import { DomainError, keysetPage, type PageRequest, type PageTokens, type Sql } from "@affiliate/platform";
import { attemptsOf, eventOf, listEvents, scheduleRetry } from "../store/events.js";
import type { EventOutcome, StoredEvent } from "./types.js";

/** The received events, newest first; the page token is bound to the product and the filter. */
export async function listStripeEvents(
  deps: { sql: Sql; pageTokens: PageTokens },
  productId: string,
  filter: { outcome?: EventOutcome | undefined },
  page: PageRequest,
): Promise<{ items: StoredEvent[]; nextPageToken: string }> {
  const scope = `stripe-events:${productId}:${filter.outcome ?? ""}`;
  return keysetPage(deps.pageTokens, scope, page, (afterId, limit) =>
    listEvents(deps.sql, productId, filter, afterId, limit),
  );
}

/**
 * Makes a failed event due again, and waits (within `waitMs`) for the worker's new outcome. Only
 * a failed event is retried: anything else has been, or is being, applied.
 */
export async function retryStripeEvent(
  deps: { sql: Sql; clock: () => Date },
  productId: string,
  eventId: string,
  waitMs: number,
): Promise<StoredEvent> {
  const event = await eventOf(deps.sql, productId, eventId);
  if (!event) throw new DomainError("not_found", `Stripe event ${eventId} not found`);
  const attempts = await scheduleRetry(deps.sql, productId, eventId, deps.clock());
  if (attempts === undefined) {
    throw new DomainError("failed_precondition", `Stripe event ${eventId} did not fail (it is ${event.outcome})`);
  }
  const deadline = Date.now() + waitMs;
  while ((await attemptsOf(deps.sql, productId, eventId)) === attempts && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (await eventOf(deps.sql, productId, eventId)) ?? event;
}
