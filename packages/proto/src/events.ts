// Every domain event on JetStream: its subject paired with the message its payload is. Producers
// (through the platform's enqueueEvent) and consumers both take subject and schema from here, so
// neither side can misspell a subject or decode another message than the one published.
import type { DescMessage } from "@bufbuild/protobuf";
import {
  CommissionApprovedSchema,
  CommissionCreatedSchema,
  CommissionRefundedSchema,
  CommissionRejectedSchema,
} from "./gen/affiliate/ledger/v1/events_pb.js";
import {
  PartnershipCommissionOverrideChangedSchema,
  PartnershipCreatedSchema,
  PartnershipReactivatedSchema,
  PartnershipRemovedSchema,
  PartnershipStatusChangedSchema,
  ProductKeysRotatedSchema,
  ProgramUpdatedSchema,
} from "./gen/affiliate/partners/v1/events_pb.js";
import {
  PayoutApprovedSchema,
  PayoutCompletedSchema,
  PayoutCreatedSchema,
  PayoutRejectedSchema,
} from "./gen/affiliate/payouts/v1/events_pb.js";
import { CustomerErasedSchema } from "./gen/affiliate/privacy/v1/events_pb.js";

/** One kind of domain event. */
export interface EventType<Desc extends DescMessage = DescMessage> {
  /** The producing service: its stream (platform streamName) carries the event. */
  readonly service: string;
  /** `<service>.<entity>.<past-tense>`, before any EVENTS_NAMESPACE prefix. */
  readonly subject: string;
  /** The message of the payload, from the service's events.proto. */
  readonly schema: Desc;
}

function eventType<Desc extends DescMessage>(subject: string, schema: Desc): EventType<Desc> {
  return Object.freeze({ service: subject.slice(0, subject.indexOf(".")), subject, schema });
}

/** Events of the partners service (stream PARTNERS). */
export const partnersEvents = {
  partnershipCreated: eventType("partners.partnership.created", PartnershipCreatedSchema),
  partnershipReactivated: eventType("partners.partnership.reactivated", PartnershipReactivatedSchema),
  partnershipRemoved: eventType("partners.partnership.removed", PartnershipRemovedSchema),
  partnershipStatusChanged: eventType("partners.partnership.status_changed", PartnershipStatusChangedSchema),
  partnershipCommissionOverrideChanged: eventType(
    "partners.partnership.commission_override_changed",
    PartnershipCommissionOverrideChangedSchema,
  ),
  productKeysRotated: eventType("partners.product.keys_rotated", ProductKeysRotatedSchema),
  programUpdated: eventType("partners.program.updated", ProgramUpdatedSchema),
} as const;

/** Events of the ledger (stream LEDGER). */
export const ledgerEvents = {
  commissionCreated: eventType("ledger.commission.created", CommissionCreatedSchema),
  commissionApproved: eventType("ledger.commission.approved", CommissionApprovedSchema),
  commissionRejected: eventType("ledger.commission.rejected", CommissionRejectedSchema),
  commissionRefunded: eventType("ledger.commission.refunded", CommissionRefundedSchema),
} as const;

/** Events of the payouts service (stream PAYOUTS). */
export const payoutsEvents = {
  payoutCreated: eventType("payouts.payout.created", PayoutCreatedSchema),
  payoutApproved: eventType("payouts.payout.approved", PayoutApprovedSchema),
  payoutRejected: eventType("payouts.payout.rejected", PayoutRejectedSchema),
  payoutCompleted: eventType("payouts.payout.completed", PayoutCompletedSchema),
} as const;

/** Events of the privacy service (stream PRIVACY). */
export const privacyEvents = {
  customerErased: eventType("privacy.customer.erased", CustomerErasedSchema),
} as const;

/** Every event type of the mesh. */
export const allEventTypes: readonly EventType[] = [
  ...Object.values(partnersEvents),
  ...Object.values(ledgerEvents),
  ...Object.values(payoutsEvents),
  ...Object.values(privacyEvents),
];

const bySubject = new Map(allEventTypes.map((event) => [event.subject, event]));

/** The event type published on a domain subject, or undefined for a subject nobody publishes. */
export function eventTypeOf(subject: string): EventType | undefined {
  return bySubject.get(subject);
}
