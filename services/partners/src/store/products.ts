import { DomainError, type Queryable } from "@affiliate/platform";
import type { KeyMode, Product } from "../domain/types.js";

export async function insertProduct(sql: Queryable, product: { id: string; name: string }): Promise<Product> {
  const [row] = await sql<Product[]>`
    insert into products (id, name) values (${product.id}, ${product.name})
    returning id, name, created_at`;
  if (!row) throw new Error("insert into products returned no row");
  await sql`insert into programs (product_id) values (${product.id})`;
  return row;
}

/** Locks the product row so that concurrent key rotations of one product run one at a time. */
export async function lockProductOrThrow(sql: Queryable, productId: string): Promise<Product> {
  const [row] = await sql<Product[]>`
    select id, name, created_at from products where id = ${productId} for update`;
  if (!row) throw new DomainError("not_found", `Product ${productId} not found`);
  return row;
}

export async function listProducts(sql: Queryable): Promise<Product[]> {
  return sql<Product[]>`select id, name, created_at from products order by id desc`;
}

export async function insertKey(
  sql: Queryable,
  key: { productId: string; mode: KeyMode; hash: Buffer },
): Promise<void> {
  await sql`insert into api_keys (key_hash, product_id, mode) values (${key.hash}, ${key.productId}, ${key.mode})`;
}

export async function revokeKeys(sql: Queryable, productId: string): Promise<void> {
  await sql`update api_keys set revoked_at = now() where product_id = ${productId} and revoked_at is null`;
}

export async function findActiveKey(
  sql: Queryable,
  hash: Buffer,
): Promise<{ productId: string; mode: KeyMode } | undefined> {
  const [row] = await sql<{ productId: string; mode: KeyMode }[]>`
    select product_id, mode from api_keys where key_hash = ${hash} and revoked_at is null`;
  return row;
}
