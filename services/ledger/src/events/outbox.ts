import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import { CommissionApprovedSchema, CommissionCreatedSchema, CommissionRejectedSchema } from "@affiliate/proto/ledger";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Commission } from "../domain/types.js";
import { commissionToProto } from "../rpc/mappers.js";

/** Subjects of the events this service publishes (stream LEDGER). */
export const subjects = {
  commissionCreated: "ledger.commission.created",
  commissionApproved: "ledger.commission.approved",
  commissionRejected: "ledger.commission.rejected",
} as const;

const schemas = {
  commissionCreated: CommissionCreatedSchema,
  commissionApproved: CommissionApprovedSchema,
  commissionRejected: CommissionRejectedSchema,
} as const;

/** Writes a commission event into the outbox of the caller's transaction. */
export function enqueueCommissionEvent(
  tx: Queryable,
  kind: keyof typeof subjects,
  commission: Commission,
): Promise<void> {
  const schema = schemas[kind];
  return enqueueEvent(
    tx,
    subjects[kind],
    schema,
    create(schema, { id: newId("evt"), occurredAt: timestampNow(), commission: commissionToProto(commission) }),
  );
}
