import type { Queryable } from "@affiliate/platform";
import type { PayoutFileFormat } from "../domain/payout-files/formats.js";
import type { Payout } from "../domain/types.js";
import { payoutColumns } from "./payouts.js";

export interface PayoutImportRecord {
  format: PayoutFileFormat;
  paidCount: number;
  failedCount: number;
  unchangedCount: number;
  pendingCount: number;
  importedAt: Date;
}

/**
 * Claims the file for this import, in the caller's transaction: true when it is new. A
 * concurrent import of the same file waits here on the key until the first one ends, then finds
 * it imported (or, if that one rolled back, claims it itself).
 */
export async function claimImport(
  sql: Queryable,
  productId: string,
  sha256: Buffer,
  format: PayoutFileFormat,
): Promise<boolean> {
  const rows = await sql`
    insert into payout_imports (product_id, file_sha256, format, paid_count, failed_count, unchanged_count, pending_count)
    values (${productId}, ${sha256}, ${format}, 0, 0, 0, 0)
    on conflict (product_id, file_sha256) do nothing
    returning file_sha256`;
  return rows.length > 0;
}

export async function recordImportCounts(
  sql: Queryable,
  productId: string,
  sha256: Buffer,
  counts: Omit<PayoutImportRecord, "format" | "importedAt">,
): Promise<PayoutImportRecord> {
  const [row] = await sql<PayoutImportRecord[]>`
    update payout_imports set paid_count = ${counts.paidCount}, failed_count = ${counts.failedCount},
      unchanged_count = ${counts.unchangedCount}, pending_count = ${counts.pendingCount}
    where product_id = ${productId} and file_sha256 = ${sha256}
    returning format, paid_count, failed_count, unchanged_count, pending_count, imported_at`;
  if (!row) throw new Error("the claimed import vanished");
  return row;
}

export async function findImport(
  sql: Queryable,
  productId: string,
  sha256: Buffer,
): Promise<PayoutImportRecord | undefined> {
  const [row] = await sql<PayoutImportRecord[]>`
    select format, paid_count, failed_count, unchanged_count, pending_count, imported_at from payout_imports
    where product_id = ${productId} and file_sha256 = ${sha256}`;
  return row;
}

/** The product's approved payouts, oldest first. */
export async function listApprovedPayouts(sql: Queryable, productId: string): Promise<Payout[]> {
  return sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts where product_id = ${productId} and status = 'approved' order by id`;
}

/** Locks the product's visible payouts among `ids`, in id order (so overlapping imports wait, never deadlock). */
export async function lockPayouts(sql: Queryable, productId: string, ids: string[]): Promise<Payout[]> {
  if (ids.length === 0) return [];
  return sql<Payout[]>`
    select ${payoutColumns(sql)} from payouts where product_id = ${productId} and id = any(${ids}::text[]) and status <> 'draft'
    order by id for update`;
}
