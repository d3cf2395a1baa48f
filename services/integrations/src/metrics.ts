import { serviceCounter } from "@affiliate/platform";
import type { EventOutcome } from "./domain/types.js";

const eventOutcomes: readonly EventOutcome[] = ["applied", "ignored", "waiting", "failed"];

/**
 * Stored Stripe events by the outcome each apply attempt recorded: `applied`,
 * `ignored` (nothing to do: a type or a case the mapping leaves alone) and `failed` end the
 * event; `waiting` is an attempt that leaves it to be tried again (its payment not yet recorded,
 * the ledger unavailable). Served on METRICS_PORT; `failed` is what the production alert watches.
 * Every outcome starts at 0, so `rate()` over any of them exists from the start.
 */
const stripeEvents = serviceCounter({
  name: "stripe_events_total",
  help: "Stripe event apply attempts by the outcome recorded: applied, ignored, failed (final), waiting (tried again later).",
  labelNames: ["outcome"],
  initial: eventOutcomes.map((outcome) => ({ outcome })),
});

export function countStripeEvent(outcome: EventOutcome): void {
  stripeEvents.inc({ outcome });
}
