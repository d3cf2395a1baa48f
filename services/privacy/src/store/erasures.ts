import type { Queryable } from "@affiliate/platform";
import type { Erasure } from "../domain/types.js";

/** An erasure's own row; its stores' counts are rows of their own. */
type ErasureRow = Omit<Erasure, "stores">;

const erasureColumns = (sql: Queryable) => sql`id, product_id, status, requested_at, completed_at, verified_at`;

export async function insertErasure(
  sql: Queryable,
  erasure: { id: string; productId: string; emailHash: string; sealedEmail: Buffer; leaseMs: number; owners: string[] },
): Promise<void> {
  await sql`
    insert into erasures (id, product_id, email_hash, sealed_email, status, lease_until)
    values (${erasure.id}, ${erasure.productId}, ${erasure.emailHash}, ${erasure.sealedEmail}, 'running',
            now() + make_interval(secs => ${erasure.leaseMs / 1000}))`;
  if (erasure.owners.length > 0) {
    await sql`
      insert into erasure_owners (erasure_id, owner)
      select ${erasure.id}, owner from unnest(${erasure.owners}::text[]) as owner`;
  }
}

/** A running erasure as its runner needs it: the sealed email and the owners still to call. */
export interface RunnableErasure {
  id: string;
  productId: string;
  sealedEmail: Buffer;
  owners: { owner: string; erased: boolean }[];
}

/**
 * Takes (or renews) the lease of a running erasure for `leaseMs`; undefined when it is not
 * running (completed meanwhile, or unknown).
 */
export async function leaseErasure(sql: Queryable, id: string, leaseMs: number): Promise<RunnableErasure | undefined> {
  const [row] = await sql<{ id: string; productId: string; sealedEmail: Buffer }[]>`
    update erasures set lease_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = attempts + 1
    where id = ${id} and status = 'running'
    returning id, product_id, sealed_email`;
  if (!row) return undefined;
  const owners = await sql<{ owner: string; erasedAt: Date | null }[]>`
    select owner, erased_at from erasure_owners where erasure_id = ${id} order by owner`;
  return { ...row, owners: owners.map((o) => ({ owner: o.owner, erased: o.erasedAt !== null })) };
}

/**
 * The running erasures nobody owns (their runner died or gave up), oldest first, leased to the
 * caller in the same statement so two resume jobs never take the same one.
 */
export async function leaseAbandonedErasures(sql: Queryable, limit: number, leaseMs: number): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    update erasures set lease_until = now() + make_interval(secs => ${leaseMs / 1000})
    where id in (
      select id from erasures where status = 'running' and lease_until <= now()
      order by requested_at limit ${limit} for update skip locked)
    returning id`;
  return rows.map((row) => row.id);
}

/** Stores an owner's counts (its whole answer for this erasure) and marks it erased. */
export async function recordOwnerErased(
  sql: Queryable,
  erasureId: string,
  owner: string,
  counts: Record<string, number>,
): Promise<void> {
  const entries = Object.entries(counts);
  if (entries.length > 0) {
    await sql`
      insert into erasure_stores (erasure_id, owner, store, records)
      select ${erasureId}, ${owner}, store, records
      from unnest(${entries.map(([store]) => store)}::text[], ${entries.map(([, n]) => n)}::bigint[]) as c(store, records)
      on conflict (erasure_id, owner, store) do update set records = excluded.records`;
  }
  await sql`
    update erasure_owners set erased_at = coalesce(erased_at, now()) where erasure_id = ${erasureId} and owner = ${owner}`;
}

/**
 * Completes a running erasure: verified, and its sealed email gone for good. Undefined when
 * another runner completed it first (only one completion emits the event).
 */
export async function completeErasure(sql: Queryable, id: string): Promise<Erasure | undefined> {
  const [row] = await sql<ErasureRow[]>`
    update erasures set status = 'completed', completed_at = now(), verified_at = now(), sealed_email = null
    where id = ${id} and status = 'running'
    returning ${erasureColumns(sql)}`;
  return row ? { ...row, stores: await storesOf(sql, id) } : undefined;
}

/** Each erasure's stores, summed over its owners (two owners may name the same store). */
async function storesOfMany(sql: Queryable, erasureIds: string[]): Promise<Map<string, Erasure["stores"]>> {
  const rows = await sql<{ erasureId: string; store: string; records: number }[]>`
    select erasure_id, store, sum(records)::bigint as records from erasure_stores
    where erasure_id = any(${erasureIds}::text[])
    group by erasure_id, store order by erasure_id, store`;
  const stores = new Map<string, Erasure["stores"]>(erasureIds.map((id) => [id, []]));
  for (const { erasureId, store, records } of rows) stores.get(erasureId)?.push({ store, records });
  return stores;
}

async function storesOf(sql: Queryable, erasureId: string): Promise<Erasure["stores"]> {
  return (await storesOfMany(sql, [erasureId])).get(erasureId) ?? [];
}

export async function getErasure(sql: Queryable, productId: string, id: string): Promise<Erasure | undefined> {
  const [row] = await sql<ErasureRow[]>`
    select ${erasureColumns(sql)} from erasures where product_id = ${productId} and id = ${id}`;
  return row ? { ...row, stores: await storesOf(sql, id) } : undefined;
}

/** The receipts of one email hash, newest first. */
export async function listErasuresByEmailHash(
  sql: Queryable,
  productId: string,
  emailHash: string,
  limit: number,
): Promise<Erasure[]> {
  const rows = await sql<ErasureRow[]>`
    select ${erasureColumns(sql)} from erasures
    where product_id = ${productId} and email_hash = ${emailHash}
    order by requested_at desc, id desc limit ${limit}`;
  const stores = await storesOfMany(
    sql,
    rows.map((row) => row.id),
  );
  return rows.map((row) => ({ ...row, stores: stores.get(row.id) ?? [] }));
}
