// Every domain event on JetStream: its subject paired with the message its payload is. Producers
// (through the platform's enqueueEvent) and consumers both take subject and schema from here, so
// neither side can misspell a subject or decode another message than the one published.
import type { DescMessage } from "@bufbuild/protobuf";
import {
  CommissionApprovedSchema,
  CommissionCreatedSchema,
  CommissionFlaggedSchema,
  CommissionRefundedSchema,
  CommissionRejectedSchema,
  CommissionReviewedSchema,
} from "./gen/affiliate/ledger/v1/events_pb.js";
import {
  AffiliateLoginRequestedSchema,
  PartnershipCommissionOverrideChangedSchema,
  PartnershipCreatedSchema,
  PartnershipReactivatedSchema,
  PartnershipRemovedSchema,
  PartnershipStatusChangedSchema,
  PartnershipTokensRevokedSchema,
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

/** One kind of domain event: its subject, producing service and payload message (the registry entry). */
export interface DomainEvent<Desc extends DescMessage = DescMessage> {
  /** The producing service: its stream (platform streamName) carries the event. */
  readonly service: string;
  /** `<service>.<entity>.<past-tense>`, before any EVENTS_NAMESPACE prefix. */
  readonly subject: string;
  /** The message of the payload, from the service's events.proto. */
  readonly schema: Desc;
}

function domainEvent<Desc extends DescMessage>(subject: string, schema: Desc): DomainEvent<Desc> {
  return Object.freeze({ service: subject.slice(0, subject.indexOf(".")), subject, schema });
}

/** Events of the partners service (stream PARTNERS). */
export const partnersEvents = {
  partnershipCreated: domainEvent("partners.partnership.created", PartnershipCreatedSchema),
  partnershipReactivated: domainEvent("partners.partnership.reactivated", PartnershipReactivatedSchema),
  partnershipRemoved: domainEvent("partners.partnership.removed", PartnershipRemovedSchema),
  partnershipStatusChanged: domainEvent("partners.partnership.status_changed", PartnershipStatusChangedSchema),
  partnershipCommissionOverrideChanged: domainEvent(
    "partners.partnership.commission_override_changed",
    PartnershipCommissionOverrideChangedSchema,
  ),
  partnershipTokensRevoked: domainEvent("partners.partnership.tokens_revoked", PartnershipTokensRevokedSchema),
  affiliateLoginRequested: domainEvent("partners.affiliate.login_requested", AffiliateLoginRequestedSchema),
  productKeysRotated: domainEvent("partners.product.keys_rotated", ProductKeysRotatedSchema),
  programUpdated: domainEvent("partners.program.updated", ProgramUpdatedSchema),
} as const;

/** Events of the ledger (stream LEDGER). */
export const ledgerEvents = {
  commissionCreated: domainEvent("ledger.commission.created", CommissionCreatedSchema),
  commissionApproved: domainEvent("ledger.commission.approved", CommissionApprovedSchema),
  commissionRejected: domainEvent("ledger.commission.rejected", CommissionRejectedSchema),
  commissionRefunded: domainEvent("ledger.commission.refunded", CommissionRefundedSchema),
  commissionFlagged: domainEvent("ledger.commission.flagged", CommissionFlaggedSchema),
  commissionReviewed: domainEvent("ledger.commission.reviewed", CommissionReviewedSchema),
} as const;

/** Events of the payouts service (stream PAYOUTS). */
export const payoutsEvents = {
  payoutCreated: domainEvent("payouts.payout.created", PayoutCreatedSchema),
  payoutApproved: domainEvent("payouts.payout.approved", PayoutApprovedSchema),
  payoutRejected: domainEvent("payouts.payout.rejected", PayoutRejectedSchema),
  payoutCompleted: domainEvent("payouts.payout.completed", PayoutCompletedSchema),
} as const;

/** Events of the privacy service (stream PRIVACY). */
export const privacyEvents = {
  customerErased: domainEvent("privacy.customer.erased", CustomerErasedSchema),
} as const;

/** Every kind of domain event of the mesh. */
export const allDomainEvents: readonly DomainEvent[] = [
  ...Object.values(partnersEvents),
  ...Object.values(ledgerEvents),
  ...Object.values(payoutsEvents),
  ...Object.values(privacyEvents),
];

const bySubject = new Map(allDomainEvents.map((event) => [event.subject, event]));

/** The domain event published on a subject, or undefined for a subject nobody publishes. */
export function domainEventOf(subject: string): DomainEvent | undefined {
  return bySubject.get(subject);
}
