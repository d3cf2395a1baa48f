import { DomainError, type Queryable } from "@affiliate/platform";
import { findActiveKey } from "../store/products.js";
import { storedHashOf } from "./rules.js";
import type { KeyMode } from "./types.js";

/** The product and mode of an active secret key; UNAUTHENTICATED for anything else. */
export async function authenticate(sql: Queryable, apiKey: string): Promise<{ productId: string; mode: KeyMode }> {
  const key = await findActiveKey(sql, storedHashOf(apiKey));
  if (!key) throw new DomainError("unauthenticated", "Invalid or revoked API key");
  return key;
}
