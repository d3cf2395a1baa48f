import { EventType, type TrackedEvent } from "@affiliate/proto/ledger";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { PublicTrackedEvent, PublicTrackingEventType, TrackEventBody } from "../schemas/tracking.js";
import { commissionSkippedName, commissionStatusName, toPublicFlags } from "./commissions.js";
import { ContractViolation, isoTime, namesOf, required } from "./common.js";

const eventTypeValues: Record<PublicTrackingEventType, EventType> = {
  click: EventType.CLICK,
  signup: EventType.SIGNUP,
  payment: EventType.PAYMENT,
};
const eventTypeNames = namesOf(eventTypeValues);

/** The ledger's TrackRequest fields of a validated POST /events body (bigint money, Date times). */
export function toTrackRequest(body: TrackEventBody) {
  return {
    type: eventTypeValues[body.type],
    referralCode: body.referral_code,
    visitorId: body.visitor_id,
    customerEmail: body.customer_email,
    providerCustomerId: body.provider_customer_id,
    amountCents: body.amount_cents === undefined ? undefined : BigInt(body.amount_cents),
    externalId: body.external_id,
    occurredAt: body.occurred_at === undefined ? undefined : timestampFromDate(body.occurred_at),
    ip: body.ip,
    userAgent: body.user_agent,
  };
}

export function toPublicTrackedEvent(event: TrackedEvent | undefined): PublicTrackedEvent {
  const tracked = required(event, "event", "ledger");
  const type = eventTypeNames[tracked.type];
  if (!type) throw new ContractViolation(`event type ${tracked.type} has no public name`);
  return {
    id: tracked.id,
    type,
    partnership_id: tracked.partnershipId || null,
    visitor_id: tracked.visitorId || null,
    occurred_at: isoTime(tracked.occurredAt, "event.occurred_at", "ledger"),
    test_mode: tracked.testMode,
    commissions: tracked.commissions.map((commission) => ({
      id: commission.id || null,
      level: commission.level,
      amount_cents: Number(commission.amountCents),
      status: commissionStatusName(commission.status),
    })),
    commission_skipped: commissionSkippedName(tracked.commissionSkipped),
    flags: toPublicFlags(tracked.flags),
  };
}
