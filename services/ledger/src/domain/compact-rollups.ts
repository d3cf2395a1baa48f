import type { Sql } from "@affiliate/platform";
import { deleteHoursBefore, foldActivityDeltas, foldPartnershipDeltas } from "../store/rollups.js";
import { windowReachDays } from "./stats.js";

const dayMs = 24 * 3600 * 1000;

/** How many deltas of each kind one fold moves: one short transaction, a few ms of locks. */
export const foldBatchSize = 5000;

/**
 * Moves the rollup deltas that writers inserted into the rollups, a batch of each kind per
 * transaction, until fewer than a batch is left. Returns how many it moved, or null when another
 * replica is folding (it then does the work).
 *
 * One replica at a time, under a transaction-level advisory lock: the rollup rows a fold upserts
 * are then written by nobody else, so a fold never waits on a row lock, and neither does a writer
 * (writers only insert deltas). A reader sees each batch's deltas or their sums, never both,
 * since the delete and the upserts are one statement.
 */
export async function foldRollupDeltas(
  sql: Sql,
  batchSize = foldBatchSize,
): Promise<{ activity: number; partnerships: number } | null> {
  const moved = { activity: 0, partnerships: 0 };
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      const [lock] = await tx<{ held: boolean }[]>`
        select pg_try_advisory_xact_lock(hashtext('ledger.rollup_compaction')) as held`;
      if (!lock?.held) return null;
      const [activity, partnerships] = await Promise.all([
        foldActivityDeltas(tx, batchSize),
        foldPartnershipDeltas(tx, batchSize),
      ]);
      return { activity, partnerships };
    });
    if (batch === null) return moved.activity + moved.partnerships > 0 ? moved : null;
    moved.activity += batch.activity;
    moved.partnerships += batch.partnerships;
    if (batch.activity < batchSize && batch.partnerships < batchSize) return moved;
  }
}

/**
 * Keeps the hourly rollups bounded: deletes the hours no stats window reaches any more (older than
 * windowReachDays: their figures stay in the daily rows). A product then keeps at most 24 rows a
 * day for two years. Returns how many rows it deleted.
 */
export async function deleteUnreachableHours(sql: Sql, now: Date, batchSize = 500): Promise<number> {
  const startOfToday = new Date(now.toISOString().slice(0, 10)).getTime();
  const deleteBefore = new Date(startOfToday - windowReachDays * dayMs);
  let deleted = 0;
  for (;;) {
    const rows = await deleteHoursBefore(sql, deleteBefore, batchSize);
    deleted += rows;
    if (rows < batchSize) return deleted;
  }
}
