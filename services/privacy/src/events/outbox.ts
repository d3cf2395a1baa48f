import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import { CustomerErasedSchema } from "@affiliate/proto/privacy";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import type { Erasure } from "../domain/types.js";

/** Subjects of the events this service publishes (stream PRIVACY). */
export const subjects = {
  customerErased: "privacy.customer.erased",
} as const;

/** customer.erased for a completed erasure, in the caller's transaction: ids and times, never the email. */
export function enqueueCustomerErased(tx: Queryable, erasure: Erasure): Promise<void> {
  return enqueueEvent(
    tx,
    subjects.customerErased,
    CustomerErasedSchema,
    create(CustomerErasedSchema, {
      id: newId("evt"),
      occurredAt: timestampNow(),
      erasureId: erasure.id,
      productId: erasure.productId,
      requestedAt: timestampFromDate(erasure.requestedAt),
      completedAt: erasure.completedAt ? timestampFromDate(erasure.completedAt) : undefined,
    }),
  );
}
