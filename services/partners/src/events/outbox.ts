import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import { partnersEvents } from "@affiliate/proto/events";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Partnership, PartnershipStatus, Program } from "../domain/types.js";
import { partnershipToProto, programToProto, statusToProto } from "../rpc/mappers.js";

/** Each function writes one event into the outbox of the caller's transaction. */
export const outbox = {
  partnershipCreated: (tx: Queryable, partnership: Partnership, facts: { newAffiliate: boolean; notify: boolean }) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipCreated,
      create(partnersEvents.partnershipCreated.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
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
        partnership: partnershipToProto(partnership),
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
        partnership: partnershipToProto(partnership),
      }),
    ),

  partnershipStatusChanged: (tx: Queryable, partnership: Partnership, previousStatus: PartnershipStatus) =>
    enqueueEvent(
      tx,
      partnersEvents.partnershipStatusChanged,
      create(partnersEvents.partnershipStatusChanged.schema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
        previousStatus: statusToProto[previousStatus],
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

  productKeysRotated: (tx: Queryable, productId: string) =>
    enqueueEvent(
      tx,
      partnersEvents.productKeysRotated,
      create(partnersEvents.productKeysRotated.schema, { id: newId("evt"), occurredAt: timestampNow(), productId }),
    ),
};
