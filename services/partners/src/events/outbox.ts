import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import {
  PartnershipCreatedSchema,
  PartnershipReactivatedSchema,
  PartnershipRemovedSchema,
  PartnershipStatusChangedSchema,
  ProductKeysRotatedSchema,
  ProgramUpdatedSchema,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Partnership, PartnershipStatus, Program } from "../domain/types.js";
import { partnershipToProto, programToProto, statusToProto } from "../rpc/mappers.js";

/** Subjects of the events this service publishes (stream PARTNERS). */
export const subjects = {
  partnershipCreated: "partners.partnership.created",
  partnershipReactivated: "partners.partnership.reactivated",
  partnershipRemoved: "partners.partnership.removed",
  partnershipStatusChanged: "partners.partnership.status_changed",
  productKeysRotated: "partners.product.keys_rotated",
  programUpdated: "partners.program.updated",
} as const;

/** Each function writes one event into the outbox of the caller's transaction. */
export const outbox = {
  partnershipCreated: (tx: Queryable, partnership: Partnership, facts: { newAffiliate: boolean; notify: boolean }) =>
    enqueueEvent(
      tx,
      subjects.partnershipCreated,
      PartnershipCreatedSchema,
      create(PartnershipCreatedSchema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
        ...facts,
      }),
    ),

  partnershipReactivated: (tx: Queryable, partnership: Partnership, facts: { notify: boolean }) =>
    enqueueEvent(
      tx,
      subjects.partnershipReactivated,
      PartnershipReactivatedSchema,
      create(PartnershipReactivatedSchema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
        ...facts,
      }),
    ),

  partnershipRemoved: (tx: Queryable, partnership: Partnership) =>
    enqueueEvent(
      tx,
      subjects.partnershipRemoved,
      PartnershipRemovedSchema,
      create(PartnershipRemovedSchema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
      }),
    ),

  partnershipStatusChanged: (tx: Queryable, partnership: Partnership, previousStatus: PartnershipStatus) =>
    enqueueEvent(
      tx,
      subjects.partnershipStatusChanged,
      PartnershipStatusChangedSchema,
      create(PartnershipStatusChangedSchema, {
        id: newId("evt"),
        occurredAt: timestampNow(),
        partnership: partnershipToProto(partnership),
        previousStatus: statusToProto[previousStatus],
      }),
    ),

  programUpdated: (tx: Queryable, program: Program) =>
    enqueueEvent(
      tx,
      subjects.programUpdated,
      ProgramUpdatedSchema,
      create(ProgramUpdatedSchema, { id: newId("evt"), occurredAt: timestampNow(), program: programToProto(program) }),
    ),

  productKeysRotated: (tx: Queryable, productId: string) =>
    enqueueEvent(
      tx,
      subjects.productKeysRotated,
      ProductKeysRotatedSchema,
      create(ProductKeysRotatedSchema, { id: newId("evt"), occurredAt: timestampNow(), productId }),
    ),
};
