import { enqueueDomainEvent, type Queryable } from "@affiliate/platform";
import { privacyEvents } from "@affiliate/proto/events";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Erasure } from "../domain/types.js";

/** customer.erased for a completed erasure, in the caller's transaction: ids and times, never the email. */
export function enqueueCustomerErased(tx: Queryable, erasure: Erasure): Promise<void> {
  return enqueueDomainEvent(tx, privacyEvents.customerErased, {
    erasureId: erasure.id,
    productId: erasure.productId,
    requestedAt: timestampFromDate(erasure.requestedAt),
    completedAt: erasure.completedAt ? timestampFromDate(erasure.completedAt) : undefined,
  });
}
