import { type StripeConnection, type StripeEvent, StripeEventOutcome } from "@affiliate/proto/integrations";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { PublicStripeConnection, PublicStripeEvent } from "./schemas/integrations.js";

const outcomes: Record<StripeEventOutcome, PublicStripeEvent["outcome"] | undefined> = {
  [StripeEventOutcome.UNSPECIFIED]: undefined,
  [StripeEventOutcome.APPLIED]: "applied",
  [StripeEventOutcome.IGNORED]: "ignored",
  [StripeEventOutcome.WAITING]: "waiting",
  [StripeEventOutcome.FAILED]: "failed",
};

export const outcomeToProto = (outcome: PublicStripeEvent["outcome"]): StripeEventOutcome =>
  Number(Object.entries(outcomes).find(([, name]) => name === outcome)?.[0]) as StripeEventOutcome;

export function toPublicStripeConnection(connection: StripeConnection | undefined): PublicStripeConnection {
  if (!connection?.connectedAt) throw new Error("integrations answered without a connection");
  return {
    webhook_path: connection.webhookPath,
    connected_at: timestampDate(connection.connectedAt).toISOString(),
    has_api_key: connection.hasApiKey,
    last_event_at: connection.lastEventAt ? timestampDate(connection.lastEventAt).toISOString() : null,
    events_received: Number(connection.eventsReceived),
  };
}

export function toPublicStripeEvent(event: StripeEvent | undefined): PublicStripeEvent {
  const outcome = event ? outcomes[event.outcome] : undefined;
  if (!event?.receivedAt || !outcome) throw new Error("integrations answered without an event");
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
