import { enqueueDomainEvents, type Queryable } from "@affiliate/platform";
import { type DomainEvent, payoutsEvents } from "@affiliate/proto/events";
import { payoutToProto } from "../codec.js";
import type { Payout } from "../domain/types.js";

export type PayoutEventKind = keyof typeof payoutsEvents;

/** Writes a payout event into the outbox of the caller's transaction. */
export function enqueuePayoutEvent(tx: Queryable, kind: PayoutEventKind, payout: Payout): Promise<void> {
  return enqueuePayoutEvents(tx, kind, [payout]);
}

/** Writes one payout event per payout into the outbox of the caller's transaction, with one statement. */
export function enqueuePayoutEvents(tx: Queryable, kind: PayoutEventKind, payouts: Payout[]): Promise<void> {
  // One type for the four events: they share their fields.
  const event: DomainEvent<(typeof payoutsEvents)[PayoutEventKind]["schema"]> = payoutsEvents[kind];
  return enqueueDomainEvents(
    tx,
    event,
    payouts.map((payout) => ({ payout: payoutToProto(payout) })),
  );
}
