import { type StripeConnection, type StripeEvent, StripeEventOutcome } from "@affiliate/proto/integrations";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { PublicStripeConnection, PublicStripeEvent } from "../schemas/integrations.js";
import { ContractViolation, namesOf } from "./common.js";

const outcomeValues: Record<PublicStripeEvent["outcome"], StripeEventOutcome> = {
  applied: StripeEventOutcome.APPLIED,
  ignored: StripeEventOutcome.IGNORED,
  waiting: StripeEventOutcome.WAITING,
  failed: StripeEventOutcome.FAILED,
};
const outcomeNames = namesOf(outcomeValues);

/** The events list's `outcome` filter as integrations takes it. */
export function stripeEventOutcomeValue(outcome: PublicStripeEvent["outcome"]): StripeEventOutcome {
  return outcomeValues[outcome];
}

export function toPublicStripeConnection(connection: StripeConnection | undefined): PublicStripeConnection {
  if (!connection?.connectedAt) throw new ContractViolation("integrations answered without a connection");
  return {
    webhook_path: connection.webhookPath,
    connected_at: timestampDate(connection.connectedAt).toISOString(),
    has_api_key: connection.hasApiKey,
    last_event_at: connection.lastEventAt ? timestampDate(connection.lastEventAt).toISOString() : null,
    events_received: Number(connection.eventsReceived),
  };
}

export function toPublicStripeEvent(event: StripeEvent | undefined): PublicStripeEvent {
  if (!event?.receivedAt) throw new ContractViolation("integrations answered without an event");
  const outcome = outcomeNames[event.outcome];
  if (!outcome) throw new ContractViolation(`Stripe event outcome ${event.outcome} has no public name`);
  return {
    id: event.id,
    type: event.type,
    livemode: event.livemode,
    received_at: timestampDate(event.receivedAt).toISOString(),
    outcome,
    detail: event.detail,
    tracking_event_id: event.trackingEventId || null,
    commission_ids: event.commissionIds,
  };
}
