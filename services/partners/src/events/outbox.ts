import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { AffiliateSchema } from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
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
    enqueueEvent(
      tx,
      partnersEvents.partnershipCreated,
      create(partnersEvents.partnershipCreated.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipWithoutPersonalData(partnership),
        ...facts,
      }),
    ),

  partnershipReactivated: (tx: Queryable, partnership: Partnership, facts: { notify: boolean }) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipReactivated,
      create(partnersEvents.partnershipReactivated.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipWithoutPersonalData(partnership),
        ...facts,
      }),
    ),

  partnershipRemoved: (tx: Queryable, partnership: Partnership) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipRemoved,
      create(partnersEvents.partnershipRemoved.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipWithoutPersonalData(partnership),
      }),
    ),

  partnershipStatusChanged: (tx: Queryable, partnership: Partnership, previousStatus: PartnershipStatus) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipStatusChanged,
      create(partnersEvents.partnershipStatusChanged.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipWithoutPersonalData(partnership),
        previousStatus: statusToProto[previousStatus],
      }),
    ),

  partnershipCommissionOverrideChanged: (tx: Queryable, partnership: Partnership) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipCommissionOverrideChanged,
      create(partnersEvents.partnershipCommissionOverrideChanged.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipWithoutPersonalData(partnership),
      }),
    ),

  programUpdated: (tx: Queryable, program: Program) =>
    enqueueEvent(
      tx,
      partnersEvents.programUpdated,
      create(partnersEvents.programUpdated.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        program: programToProto(program),
      }),
    ),

  partnershipTokensRevoked: (tx: Queryable, productId: string, partnershipId: string) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipTokensRevoked,
      create(partnersEvents.partnershipTokensRevoked.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        productId,
        partnershipId,
      }),
    ),

  /** Ids only: the notifier asks for the code (IssueAffiliateLoginCode), so no code is in the stream. */
  affiliateLoginRequested: (tx: Queryable, login: { id: string; productId: string; partnershipId: string }) =>
    enqueueEvent(
      tx,
      partnersEvents.affiliateLoginRequested,
      create(partnersEvents.affiliateLoginRequested.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        productId: login.productId,
        partnershipId: login.partnershipId,
        loginId: login.id,
      }),
    ),

  productKeysRotated: (tx: Queryable, productId: string) =>
    enqueueEvent(
      tx,
      partnersEvents.productKeysRotated,
      create(partnersEvents.productKeysRotated.schema, { id: newId("evt"), occurredAt: timestampNow(), productId }),
    ),
};
