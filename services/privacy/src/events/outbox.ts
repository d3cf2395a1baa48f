import { enqueueEvent, newId, type Queryable } from "@affiliate/platform";
import { privacyEvents } from "@affiliate/proto/events";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import type { Erasure } from "../domain/types.js";

/** customer.erased for a completed erasure, in the caller's transaction: ids and times, never the email. */
export function enqueueCustomerErased(tx: Queryable, erasure: Erasure): Promise<void> {
  const event = privacyEvents.customerErased;
  return enqueueEvent(
    tx,
    event,
    create(event.schema, {
      id: newId("evt"),
      occurredAt: timestampNow(),
      erasureId: erasure.id,
      productId: erasure.productId,
      requestedAt: timestampFromDate(erasure.requestedAt),
      completedAt: erasure.completedAt ? timestampFromDate(erasure.completedAt) : undefined,
    }),
  );
}
