import { enqueueDomainEvent, type Queryable } from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { AffiliateSchema } from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { partnershipToProto, programToProto, statusToProto } from "../codec.js";
import type { Partnership, PartnershipStatus, Program } from "../domain/types.js";

/**
 * The partnership as events carry it: ids, code, status and sponsor, the affiliate reduced to
 * its id. An email or a name written here would sit in the outbox and the stream, out of reach
 * of an erasure; consumers that need them (the notifier's welcome email and webhook bodies) ask
 * GetPartnership when they handle the event.
 */
function partnershipWithoutPersonalData(partnership: Partnership) {
  const event = partnershipToProto(partnership);
  event.affiliate = create(AffiliateSchema, { id: partnership.affiliate.id });
  return event;
}

/** Each function writes one event into the outbox of the caller's transaction. */
export const outbox = {
  partnershipCreated: (tx: Queryable, partnership: Partnership, facts: { newAffiliate: boolean; notify: boolean }) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipCreated, {
      partnership: partnershipWithoutPersonalData(partnership),
      ...facts,
    }),

  partnershipReactivated: (tx: Queryable, partnership: Partnership, facts: { notify: boolean }) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipReactivated, {
      partnership: partnershipWithoutPersonalData(partnership),
      ...facts,
    }),

  partnershipRemoved: (tx: Queryable, partnership: Partnership) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipRemoved, {
      partnership: partnershipWithoutPersonalData(partnership),
    }),

  partnershipStatusChanged: (tx: Queryable, partnership: Partnership, previousStatus: PartnershipStatus) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipStatusChanged, {
      partnership: partnershipWithoutPersonalData(partnership),
      previousStatus: statusToProto[previousStatus],
    }),

  partnershipCommissionOverrideChanged: (tx: Queryable, partnership: Partnership) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipCommissionOverrideChanged, {
      partnership: partnershipWithoutPersonalData(partnership),
    }),

  programUpdated: (tx: Queryable, program: Program) =>
    enqueueDomainEvent(tx, partnersEvents.programUpdated, {
      program: programToProto(program),
    }),

  partnershipTokensRevoked: (tx: Queryable, productId: string, partnershipId: string) =>
    enqueueDomainEvent(tx, partnersEvents.partnershipTokensRevoked, {
      productId,
      partnershipId,
    }),

  /** Ids only: the notifier asks for the code (IssueAffiliateLoginCode), so no code is in the stream. */
  affiliateLoginRequested: (tx: Queryable, login: { id: string; productId: string; partnershipId: string }) =>
    enqueueDomainEvent(tx, partnersEvents.affiliateLoginRequested, {
      productId: login.productId,
      partnershipId: login.partnershipId,
      loginId: login.id,
    }),

  productKeysRotated: (tx: Queryable, productId: string) =>
    enqueueDomainEvent(tx, partnersEvents.productKeysRotated, { productId }),
};
