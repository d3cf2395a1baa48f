import type { Sql } from "@affiliate/platform";
import {
  daysWithShards,
  deleteHoursBefore,
  foldShardsOfDay,
  foldShardsOfHour,
  hoursWithShards,
} from "../store/rollups.js";
import { windowReachDays } from "./stats.js";

const dayMs = 24 * 3600 * 1000;

/**
 * Days (and hours) this recent keep their shards: today's rows take every new event, and
 * spreading them over 16 shards keeps concurrent writers off one row. Older days change only on
 * refunds, approvals and payouts, so one row each is enough, and a 12-month stats window then sums
 * ~365 rows instead of ~5,840.
 */
export const shardedDays = 2;

/**
 * Folds the shards of every product-day older than shardedDays into shard 0, a day at a time,
 * `batchSize` days per read. A fold is one statement, safe beside writers and on every replica
 * (two replicas folding one day just fold it twice; the second finds nothing left). Rows that
 * later writes add to an old day's other shards are folded by the next run. Returns how many
 * product-days it folded.
 */
export async function compactDailyRollups(sql: Sql, now: Date, batchSize = 500): Promise<number> {
  const beforeDay = new Date(now.getTime() - shardedDays * dayMs).toISOString().slice(0, 10);
  let folded = 0;
  for (;;) {
    const days = await daysWithShards(sql, beforeDay, batchSize);
    for (const { productId, day } of days) await foldShardsOfDay(sql, productId, day);
    folded += days.length;
    if (days.length < batchSize) return folded;
  }
}

/**
 * Keeps the hourly rollups bounded: folds the shards of every product-hour older than
 * shardedDays into shard 0 (as compactDailyRollups folds days, and as safely), and deletes the
 * hours no stats window reaches any more (older than windowReachDays: their figures stay in the
 * daily rows). A product then keeps at most 24 rows a day for two years, plus the shards of the
 * last two days. Returns how many product-hours it folded and how many rows it deleted.
 */
export async function compactHourlyRollups(
  sql: Sql,
  now: Date,
  batchSize = 500,
): Promise<{ folded: number; deleted: number }> {
  const startOfToday = new Date(now.toISOString().slice(0, 10)).getTime();
  const foldBefore = new Date(startOfToday - shardedDays * dayMs);
  const deleteBefore = new Date(startOfToday - windowReachDays * dayMs);
  let folded = 0;
  for (;;) {
    const hours = await hoursWithShards(sql, foldBefore, batchSize);
    for (const { productId, hour } of hours) await foldShardsOfHour(sql, productId, hour);
    folded += hours.length;
    if (hours.length < batchSize) break;
  }
  let deleted = 0;
  for (;;) {
    const rows = await deleteHoursBefore(sql, deleteBefore, batchSize);
    deleted += rows;
    if (rows < batchSize) return { folded, deleted };
  }
}
