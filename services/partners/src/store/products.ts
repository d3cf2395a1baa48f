import { DomainError, type Queryable } from "@affiliate/platform";
import type { KeyMode, Product, PublishableKeys, ReferralLink } from "../domain/types.js";

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

/** Stores a key's hash; a publishable key's text too (`publishableKey`), as it is public by design. */
export async function insertKey(
  sql: Queryable,
  key: { productId: string; mode: KeyMode; hash: Buffer; publishableKey?: string },
): Promise<void> {
  await sql`
    insert into api_keys (key_hash, product_id, mode, publishable_key)
    values (${key.hash}, ${key.productId}, ${key.mode}, ${key.publishableKey ?? null})`;
}

/** Revokes the product's active keys: every kind, or only the publishable ones. */
export async function revokeKeys(
  sql: Queryable,
  productId: string,
  which: "all" | "publishable" = "all",
): Promise<void> {
  await sql`
    update api_keys set revoked_at = now()
    where product_id = ${productId} and revoked_at is null
      ${which === "publishable" ? sql`and mode in ('publishable_live', 'publishable_test')` : sql``}`;
}

/** The product's active publishable keys, or undefined when it has none (made before they existed). */
export async function activePublishableKeys(sql: Queryable, productId: string): Promise<PublishableKeys | undefined> {
  const rows = await sql<{ mode: KeyMode; publishableKey: string; createdAt: Date }[]>`
    select mode, publishable_key, created_at from api_keys
    where product_id = ${productId} and revoked_at is null and mode in ('publishable_live', 'publishable_test')`;
  const live = rows.find((row) => row.mode === "publishable_live");
  const test = rows.find((row) => row.mode === "publishable_test");
  if (!live || !test) return undefined;
  return { publishableKey: live.publishableKey, testPublishableKey: test.publishableKey, createdAt: live.createdAt };
}

/**
 * The active partnerships with this code, in every product (at most one per product), with
 * their programs' link template: a referral link's only lookup.
 */
export async function activePartnershipsByCode(sql: Queryable, referralCode: string): Promise<ReferralLink[]> {
  return sql<ReferralLink[]>`
    select p.product_id, p.id as partnership_id, p.referral_code, g.referral_url_template
    from partnerships p join programs g on g.product_id = p.product_id
    where lower(p.referral_code) = lower(${referralCode}) and p.status = 'active'
    limit 2`;
}

export async function findActiveKey(
  sql: Queryable,
  hash: Buffer,
): Promise<{ productId: string; mode: KeyMode } | undefined> {
  const [row] = await sql<{ productId: string; mode: KeyMode }[]>`
    select product_id, mode from api_keys where key_hash = ${hash} and revoked_at is null`;
  return row;
}
