import type { Sql } from "@affiliate/platform";
import { countCustomerPayloads, eraseCustomerPayloads } from "../store/deliveries.js";
import { countQueuedMentions, eraseQueuedMentions } from "../store/emails.js";

/** Counts per store, named as the erasure receipt shows them. */
export interface StoreCounts {
  webhook_deliveries: number;
  emails: number;
}

/**
 * Erasure (spec 4.11, contract 9a): stored payloads' `data.customer_email` set to null and the
 * address replaced wherever else they quote it (a refund's reason), and removed from the text of
 * the product's emails, queued or already sent, in this product only. Idempotent: a repeat
 * counts 0.
 */
export function eraseCustomer(sql: Sql, productId: string, email: string): Promise<StoreCounts> {
  return sql.begin(async (tx) => ({
    webhook_deliveries: await eraseCustomerPayloads(tx, productId, email),
    emails: await eraseQueuedMentions(tx, productId, email),
  }));
}

/** What still holds the customer's email, per store, without changing anything. */
export async function findCustomer(sql: Sql, productId: string, email: string): Promise<StoreCounts> {
  return {
    webhook_deliveries: await countCustomerPayloads(sql, productId, email),
    emails: await countQueuedMentions(sql, productId, email),
  };
}
