import { enqueueEvents, newId, type Queryable } from "@affiliate/platform";
import {
  PayoutApprovedSchema,
  PayoutCompletedSchema,
  PayoutCreatedSchema,
  PayoutRejectedSchema,
} from "@affiliate/proto/payouts";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { Payout } from "../domain/types.js";
import { payoutToProto } from "../rpc/mappers.js";

/** Subjects of the events this service publishes (stream PAYOUTS). */
export const subjects = {
  payoutCreated: "payouts.payout.created",
  payoutApproved: "payouts.payout.approved",
  payoutRejected: "payouts.payout.rejected",
  payoutCompleted: "payouts.payout.completed",
} as const;

const schemas = {
  payoutCreated: PayoutCreatedSchema,
  payoutApproved: PayoutApprovedSchema,
  payoutRejected: PayoutRejectedSchema,
  payoutCompleted: PayoutCompletedSchema,
} as const;

export type PayoutEventKind = keyof typeof subjects;

/** Writes a payout event into the outbox of the caller's transaction. */
export function enqueuePayoutEvent(tx: Queryable, kind: PayoutEventKind, payout: Payout): Promise<void> {
  return enqueuePayoutEvents(tx, kind, [payout]);
}

/** Writes one payout event per payout into the outbox of the caller's transaction, with one statement. */
export function enqueuePayoutEvents(tx: Queryable, kind: PayoutEventKind, payouts: Payout[]): Promise<void> {
  const schema = schemas[kind];
  const occurredAt = timestampNow();
  return enqueueEvents(
    tx,
    subjects[kind],
    schema,
    payouts.map((payout) => create(schema, { id: newId("evt"), occurredAt, payout: payoutToProto(payout) })),
  );
}
