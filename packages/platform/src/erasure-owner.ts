import { isValidEmail, normalizeEmail } from "@affiliate/contract-rules";
import type { ErasureOwnerService } from "@affiliate/proto/erasure";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Queryable } from "./db.js";
import { DomainError } from "./errors.js";

/** Records per store, by the store's public name ("tracking_events"). */
export type StoreCounts = Record<string, number>;

/** Whose personal data an erasure is about: a customer's email within one product. */
export interface ErasureSubject {
  productId: string;
  email: string;
}

/**
 * What a service that holds customers' personal data does for an erasure (contract 9a). The
 * privacy service calls it through ErasureOwnerService; `stores` names every store searched,
 * so the receipt lists them even when nothing matched.
 */
export interface ErasureOwner {
  stores: readonly string[];
  /**
   * Erases what is left of the customer, adding each batch's count with
   * `addErasedRecords` in the batch's own transaction. Repeating it is harmless.
   */
  erase(request: ErasureSubject & { erasureId: string }): Promise<void>;
  /** Counts what still holds the customer's personal data, changing nothing. */
  find(request: ErasureSubject): Promise<StoreCounts>;
}

/**
 * Adds `counts` to what erasure `erasureId` changed, in the caller's transaction: the one that
 * changed the records. After a crash on either side, the privacy service's repeat of the call
 * answers the whole count: what the first attempt erased is not found again, but was recorded.
 */
export async function addErasedRecords(tx: Queryable, erasureId: string, counts: StoreCounts): Promise<void> {
  const entries = Object.entries(counts).filter(([, records]) => records > 0);
  if (entries.length === 0) return;
  await tx`
    insert into erasure_counts (erasure_id, store, records)
    select ${erasureId}, store, records
    from unnest(${entries.map(([store]) => store)}::text[], ${entries.map(([, records]) => records)}::bigint[])
      as counted(store, records)
    on conflict (erasure_id, store) do update
      set records = erasure_counts.records + excluded.records, updated_at = now()`;
}

/**
 * Sets a store's count of erasure `erasureId`, for a store whose erasure counts what matched
 * rather than what changed (so a repeat finds, and counts, the same records again).
 */
export async function setErasedRecords(
  tx: Queryable,
  erasureId: string,
  store: string,
  records: number,
): Promise<void> {
  await tx`
    insert into erasure_counts (erasure_id, store, records) values (${erasureId}, ${store}, ${records})
    on conflict (erasure_id, store) do update set records = excluded.records, updated_at = now()`;
}

/** What erasure `erasureId` changed so far, one entry per store of `stores` (0 when none). */
export async function erasedRecords(
  sql: Queryable,
  erasureId: string,
  stores: readonly string[],
): Promise<StoreCounts> {
  const rows = await sql<{ store: string; records: number }[]>`
    select store, records from erasure_counts where erasure_id = ${erasureId}`;
  const counts: StoreCounts = Object.fromEntries(stores.map((store) => [store, 0]));
  for (const row of rows) counts[row.store] = row.records;
  return counts;
}

const toStoreCounts = (counts: StoreCounts) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([store, records]) => ({ store, records: BigInt(records) }));

function customerOf(request: ErasureSubject): ErasureSubject {
  const email = normalizeEmail(request.email);
  // The caller normalises; anything else is a caller bug that must not erase the wrong records.
  if (email !== request.email || !isValidEmail(email)) {
    throw DomainError.invalidField("email", "Must be a trimmed, lowercased email address");
  }
  if (request.productId === "") throw DomainError.invalidField("product_id", "Required");
  return { productId: request.productId, email };
}

/**
 * The ErasureOwnerService of a service, served on its RPC port beside its own service.
 * EraseCustomer erases and answers every count this erasure id has made, repeats included.
 */
export function erasureOwnerService(sql: Queryable, owner: ErasureOwner): ServiceImpl<typeof ErasureOwnerService> {
  return {
    async eraseCustomer(request) {
      const customer = customerOf(request);
      if (request.erasureId === "") throw DomainError.invalidField("erasure_id", "Required");
      await owner.erase({ ...customer, erasureId: request.erasureId });
      return { stores: toStoreCounts(await erasedRecords(sql, request.erasureId, owner.stores)) };
    },
    async findCustomer(request) {
      const found = await owner.find(customerOf(request));
      const counts = Object.fromEntries(owner.stores.map((store) => [store, found[store] ?? 0]));
      return { stores: toStoreCounts(counts) };
    },
  };
}

/** What replaces an email quoted in free text or stored payloads (spec 4.11). */
export const erasedMarker = "[erased]";

/**
 * A regular expression (Postgres ARE, applied with the `gi` flags) matching `text` literally: a
 * reason may quote the email with other capitals than the normalised one.
 */
export function literalPattern(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|-]/g, "\\$&");
}

/** The email as it appears inside a JSON string (what `jsonb::text` shows). */
export function emailInJson(email: string): string {
  return JSON.stringify(email).slice(1, -1);
}
