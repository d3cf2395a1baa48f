import type { Sql } from "@affiliate/platform";
import type { ErasureOwnerService } from "@affiliate/proto/erasure";
import type { ServiceImpl } from "@connectrpc/connect";
import { eraseCustomer, findCustomer, type StoreCounts } from "../domain/erase-customer.js";

const stores = (counts: StoreCounts) =>
  Object.entries(counts).map(([store, records]) => ({ store, records: BigInt(records) }));

/** The notifier's part of an erasure: stored webhook payloads and queued emails. */
export function createErasureService(deps: { sql: Sql }): ServiceImpl<typeof ErasureOwnerService> {
  return {
    async eraseCustomer(req) {
      return { stores: stores(await eraseCustomer(deps.sql, req.productId, req.email)) };
    },
    async findCustomer(req) {
      return { stores: stores(await findCustomer(deps.sql, req.productId, req.email)) };
    },
  };
}
