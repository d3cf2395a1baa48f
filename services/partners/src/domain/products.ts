import type { TransactionSql } from "@affiliate/platform";
import { DomainError, newId, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { deleteProductConsoleSessions } from "../store/console-sessions.js";
import { activePublishableKeys, insertKey, insertProduct, lockProductOrThrow, revokeKeys } from "../store/products.js";
import { generateKey, storedHashOf } from "./rules.js";
import type { IssuedKeys, Product, PublishableKeys } from "./types.js";

async function issuePublishableKeys(tx: TransactionSql, productId: string, now: Date): Promise<PublishableKeys> {
  const keys = { publishableKey: generateKey("publishable_live"), testPublishableKey: generateKey("publishable_test") };
  const publishable = [
    ["publishable_live", keys.publishableKey],
    ["publishable_test", keys.testPublishableKey],
  ] as const;
  for (const [mode, key] of publishable) {
    await insertKey(tx, { productId, mode, hash: storedHashOf(key), publishableKey: key });
  }
  return { ...keys, createdAt: now };
}

async function issueKeys(tx: TransactionSql, productId: string): Promise<IssuedKeys> {
  const secret = { secretKey: generateKey("live"), testSecretKey: generateKey("test") };
  await insertKey(tx, { productId, mode: "live", hash: storedHashOf(secret.secretKey) });
  await insertKey(tx, { productId, mode: "test", hash: storedHashOf(secret.testSecretKey) });
  const { publishableKey, testPublishableKey } = await issuePublishableKeys(tx, productId, new Date());
  return { ...secret, publishableKey, testPublishableKey };
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

/**
 * The product's publishable keys. A product made before they existed gets its pair on the first
 * read (under the product's lock, so two first reads agree on one pair).
 */
export async function getPublishableKeys(sql: Sql, productId: string): Promise<PublishableKeys> {
  const current = await activePublishableKeys(sql, productId);
  if (current) return current;
  return sql.begin(async (tx) => {
    await lockProductOrThrow(tx, productId);
    return (await activePublishableKeys(tx, productId)) ?? issuePublishableKeys(tx, productId, new Date());
  });
}

/**
 * Revokes the product's publishable keys and issues a new pair; the secret keys are untouched.
 * The ProductKeysRotated event commits with the change, so every gateway evicts the old pair.
 */
export async function rotatePublishableKeys(sql: Sql, productId: string): Promise<PublishableKeys> {
  return sql.begin(async (tx) => {
    await lockProductOrThrow(tx, productId);
    await revokeKeys(tx, productId, "publishable");
    const keys = await issuePublishableKeys(tx, productId, new Date());
    await outbox.productKeysRotated(tx, productId);
    return keys;
  });
}
