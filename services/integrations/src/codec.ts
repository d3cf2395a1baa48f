import type { ProtoEnumTable } from "@affiliate/platform";
import type { StripeConnectionSchema, StripeEventSchema } from "@affiliate/proto/integrations";
import { type StripeConnection, type StripeEvent, StripeEventOutcome } from "@affiliate/proto/integrations";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectionView, EventOutcome, StoredEvent } from "./domain/types.js";

export const outcomeToProto: ProtoEnumTable<EventOutcome, StripeEventOutcome> = {
  applied: StripeEventOutcome.APPLIED,
  ignored: StripeEventOutcome.IGNORED,
  waiting: StripeEventOutcome.WAITING,
  failed: StripeEventOutcome.FAILED,
};

/** The receiver's path of a connection, under the gateway's public address. */
export const webhookPathOf = (connectionId: string) => `/integrations/stripe/${connectionId}`;

export function connectionToProto(
  view: ConnectionView,
): MessageInitShape<typeof StripeConnectionSchema> & Partial<StripeConnection> {
  return {
    id: view.id,
    webhookPath: webhookPathOf(view.id),
    connectedAt: timestampFromDate(view.connectedAt),
    hasApiKey: view.hasApiKey,
    lastEventAt: view.lastEventAt ? timestampFromDate(view.lastEventAt) : undefined,
    eventsReceived: BigInt(view.eventsReceived),
  };
}

export function eventToProto(event: StoredEvent): MessageInitShape<typeof StripeEventSchema> & Partial<StripeEvent> {
  return {
    id: event.eventId,
    type: event.type,
    livemode: event.livemode,
    receivedAt: timestampFromDate(event.receivedAt),
    outcome: outcomeToProto[event.outcome],
    detail: event.detail,
    trackingEventId: event.trackingEventId ?? "",
    commissionIds: event.commissionIds,
  };
}
