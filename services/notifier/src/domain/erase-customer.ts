import { addErasedRecords, type ErasureOwner, type Sql } from "@affiliate/platform";
import { countCustomerPayloads, eraseCustomerPayloads } from "../store/deliveries.js";
import { countQueuedMentions, eraseQueuedMentions } from "../store/emails.js";
import { lockProductEndpoints } from "../store/endpoints.js";

/** The notifier's stores, as the erasure receipt names them. */
export const notifierStores = ["webhook_deliveries", "emails"] as const;

/**
 * The notifier's part of an erasure (spec 4.11, contract 9a): stored payloads'
 * `data.customer_email` set to null and the address replaced wherever else they quote it (a
 * refund's reason), and removed from the text of the product's emails, queued or already sent,
 * in this product only. What it changed is counted in the same transaction (the platform's
 * erasure_counts), so a privacy saga that repeats the call after a crash still gets the whole
 * count. Repeating it changes nothing more.
 */
export function notifierErasureOwner(sql: Sql): ErasureOwner {
  return {
    stores: notifierStores,
    erase: ({ productId, email, erasureId }) =>
      sql.begin(async (tx) => {
        // The product's endpoints before their deliveries (the lock order, store/endpoints.ts).
        await lockProductEndpoints(tx, productId);
        const counts = {
          webhook_deliveries: await eraseCustomerPayloads(tx, productId, email),
          emails: await eraseQueuedMentions(tx, productId, email),
        };
        await addErasedRecords(tx, erasureId, counts);
      }),
    find: async ({ productId, email }) => ({
      webhook_deliveries: await countCustomerPayloads(sql, productId, email),
      emails: await countQueuedMentions(sql, productId, email),
    }),
  };
}
