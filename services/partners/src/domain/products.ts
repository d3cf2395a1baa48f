import type { TransactionSql } from "@affiliate/platform";
import { DomainError, newId, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { deleteProductConsoleSessions } from "../store/console-sessions.js";
import { insertKey, insertProduct, lockProductOrThrow, revokeKeys } from "../store/products.js";
import { generateKey, hashKey } from "./rules.js";
import type { IssuedKeys, Product } from "./types.js";

async function issueKeys(tx: TransactionSql, productId: string): Promise<IssuedKeys> {
  const keys = { secretKey: generateKey("live"), testSecretKey: generateKey("test") };
  await insertKey(tx, { productId, mode: "live", hash: hashKey(keys.secretKey) });
  await insertKey(tx, { productId, mode: "test", hash: hashKey(keys.testSecretKey) });
  return keys;
}

/** Creates a product with the default program and a fresh live/test key pair. */
export async function createProduct(sql: Sql, name: string): Promise<{ product: Product; keys: IssuedKeys }> {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > 200) {
    throw DomainError.invalidField("name", "Name must be 1-200 characters");
  }
  return sql.begin(async (tx) => {
    const product = await insertProduct(tx, { id: newId("prd"), name: trimmed });
    return { product, keys: await issueKeys(tx, product.id) };
  });
}

/**
 * Revokes the product's keys (and the console sessions they opened) and issues new ones. The ProductKeysRotated event commits with the
 * change, so every gateway evicts the old keys from its cache.
 */
export async function rotateKeys(sql: Sql, productId: string): Promise<{ product: Product; keys: IssuedKeys }> {
  return sql.begin(async (tx) => {
    const product = await lockProductOrThrow(tx, productId);
    await revokeKeys(tx, productId);
    // Console sessions were bought with the old keys: they end with them (contract section 19).
    await deleteProductConsoleSessions(tx, productId);
    const keys = await issueKeys(tx, productId);
    await outbox.productKeysRotated(tx, productId);
    return { product, keys };
  });
}
