import type { ErasureSubject, Sql } from "@affiliate/platform";
import { listErasuresByEmailHash } from "../store/erasures.js";
import type { EmailKeys } from "./email-keys.js";
import { customerEmailOrThrow } from "./erase-customer.js";
import type { Erasure } from "./types.js";

/** At most this many receipts per email: a customer is erased a handful of times, not hundreds. */
export const maxListedErasures = 100;

/** The receipts of one email in the product, newest first, found by the email's keyed hash. */
export async function listErasures(sql: Sql, keys: EmailKeys, request: ErasureSubject): Promise<Erasure[]> {
  const email = customerEmailOrThrow(request.email);
  return listErasuresByEmailHash(sql, request.productId, keys.hash(email), maxListedErasures);
}
