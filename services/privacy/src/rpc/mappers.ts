import { type Erasure as ErasureMessage, ErasureSchema, ErasureStatus } from "@affiliate/proto/privacy";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Erasure } from "../domain/types.js";

const statusToProto = { running: ErasureStatus.RUNNING, completed: ErasureStatus.COMPLETED } as const;

export function erasureToProto(erasure: Erasure): ErasureMessage {
  return create(ErasureSchema, {
    id: erasure.id,
    productId: erasure.productId,
    status: statusToProto[erasure.status],
    requestedAt: timestampFromDate(erasure.requestedAt),
    completedAt: erasure.completedAt ? timestampFromDate(erasure.completedAt) : undefined,
    verifiedAt: erasure.verifiedAt ? timestampFromDate(erasure.verifiedAt) : undefined,
    stores: erasure.stores.map(({ store, records }) => ({ store, records: BigInt(records) })),
  });
}
