import { DomainError, newId, type SealingKey, type Sql } from "@affiliate/platform";
import { connectionOfProduct } from "../store/connections.js";
import { insertEvent, lastReceivedAt, outcomesOf } from "../store/events.js";
import type { ReceivedEvent } from "./types.js";

/** How far back reconciliation may look (contract section 13). */
export const maxLookbackMs = 30 * 24 * 60 * 60 * 1000;
/** By default it starts this long before the last event received. */
const defaultOverlapMs = 24 * 60 * 60 * 1000;

export interface ReconcileDeps {
  sql: Sql;
  sealing: SealingKey;
  clock: () => Date;
  /** The provider's events of the handled types since a time (providers/stripe/events-api.ts). */
  eventsSince(apiKey: string, since: Date): AsyncIterable<ReceivedEvent>;
}

export interface ReconcileReport {
  fetched: number;
  new: number;
  applied: number;
  failed: number;
}

/**
 * Asks Stripe for the events since `since` (default: 24 hours before the last one received, at
 * most 30 days back) and stores each one not received yet exactly as a delivery would, so the
 * apply worker applies it; then waits, within `waitMs`, for the new ones to be applied. What a
 * missed delivery would have done, reconciliation does, once: the event id is the key.
 */
export async function reconcileStripe(
  deps: ReconcileDeps,
  productId: string,
  options: { since?: Date | undefined; waitMs: number },
): Promise<ReconcileReport> {
  const connection = await connectionOfProduct(deps.sql, productId);
  if (!connection) throw new DomainError("not_found", "Stripe is not connected");
  if (!connection.apiKey) {
    throw new DomainError("failed_precondition", "Reconciliation needs an API key: connect Stripe with api_key");
  }
  const now = deps.clock();
  const earliest = new Date(now.getTime() - maxLookbackMs);
  const last = await lastReceivedAt(deps.sql, productId);
  const requested = options.since ?? (last ? new Date(last.getTime() - defaultOverlapMs) : earliest);
  const since = requested < earliest ? earliest : requested;

  let fetched = 0;
  const stored: string[] = [];
  try {
    // Stripe lists events newest first; they are stored, and so applied, oldest first: a missed
    // customer.created before its customer's invoice.paid, as they happened. (Reversed first, so
    // events of the same second keep Stripe's order; then sorted, as pages may interleave.)
    const events: ReceivedEvent[] = [];
    for await (const event of deps.eventsSince(deps.sealing.open(connection.apiKey), since)) {
      fetched += 1;
      events.push(event);
    }
    events.reverse();
    events.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    for (const event of events) {
      const id = newId("sev");
      const isNew = await insertEvent(deps.sql, {
        ...event,
        id,
        productId,
        connectionId: connection.id,
        now: deps.clock(),
      });
      if (isNew) stored.push(id);
    }
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw new DomainError(
      "unavailable",
      `Stripe's events API could not be read (${fetched} events fetched, ${stored.length} new stored): ${(error as Error).message}`,
    );
  }

  const deadline = Date.now() + options.waitMs;
  for (;;) {
    const outcomes = await outcomesOf(deps.sql, stored);
    const settled = outcomes.filter((o) => o.attempted);
    if (settled.length === outcomes.length || Date.now() >= deadline) {
      return {
        fetched,
        new: stored.length,
        applied: settled.filter((o) => o.outcome === "applied").length,
        failed: settled.filter((o) => o.outcome === "failed").length,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
