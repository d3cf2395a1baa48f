import { randomInt } from "node:crypto";
import type { Queryable } from "@affiliate/platform";
import {
  addToDailyRollup,
  addToHourlyRollup,
  addToPartnershipActivityRollup,
  addToPartnershipRollup,
  type MetricsDelta,
  type PartnershipDelta,
  shardCount,
} from "../store/rollups.js";

const zeroActivity: Required<MetricsDelta> = {
  clicks: 0,
  signups: 0,
  conversions: 0,
  revenueCents: 0,
  commissionsCents: 0,
};

const zeroPartnership: Required<PartnershipDelta> = {
  clicks: 0,
  conversions: 0,
  pendingCount: 0,
  pendingAmountCents: 0,
  approvedCount: 0,
  approvedAmountCents: 0,
  paidCount: 0,
  paidAmountCents: 0,
};

function addInto<T extends Record<string, number>>(target: T, delta: Partial<T>): void {
  for (const [key, value] of Object.entries(delta)) {
    if (value !== undefined) (target as Record<string, number>)[key] = (target[key] ?? 0) + value;
  }
}

const isZero = (delta: Record<string, number>) => Object.values(delta).every((value) => value === 0);

/** A product's (or one partnership's) activity figures in one rollup row (of a day or of an hour). */
interface ActivityEntry {
  productId: string;
  delta: Required<MetricsDelta>;
}

type PartnershipActivityEntry = ActivityEntry & { partnershipId: string; period: "day" | "hour"; at: string };

function addToEntry<Entry extends ActivityEntry>(
  entries: Map<string, Entry>,
  key: string,
  fresh: () => Entry,
  delta: MetricsDelta,
): void {
  const entry = entries.get(key) ?? fresh();
  addInto(entry.delta, delta);
  entries.set(key, entry);
}

/**
 * The rollup changes of one transaction, gathered in memory and written once, just before commit:
 * one upsert per row, rows in a fixed order (product days, product hours, partnership days and
 * hours, then partnerships' all-time rows by id), all on one shard
 * picked for the transaction. Concurrent transactions therefore take rollup row locks in the same
 * order and cannot deadlock, and a payment touches its day's row once instead of three times.
 */
export class RollupChanges {
  private readonly daily = new Map<string, ActivityEntry & { day: string }>();
  private readonly hourly = new Map<string, ActivityEntry & { hour: string }>();
  private readonly partnershipActivity = new Map<string, PartnershipActivityEntry>();
  private readonly partnerships = new Map<
    string,
    { productId: string; partnershipId: string; delta: Required<PartnershipDelta> }
  >();

  /**
   * Adds to the product's figures of the UTC day of `at` and of its UTC hour, and, for activity
   * attributed to a partnership, to that partnership's: the rollups always change together, so
   * each stays equal to the events and commissions it summarises.
   */
  addActivity(productId: string, at: Date, delta: MetricsDelta, partnershipId: string | null = null): void {
    const day = at.toISOString().slice(0, 10);
    const hour = `${at.toISOString().slice(0, 13)}:00:00.000Z`;
    addToEntry(this.daily, `${productId}|${day}`, () => ({ productId, day, delta: { ...zeroActivity } }), delta);
    addToEntry(this.hourly, `${productId}|${hour}`, () => ({ productId, hour, delta: { ...zeroActivity } }), delta);
    if (partnershipId === null) return;
    for (const [period, start] of [
      ["day", day],
      ["hour", hour],
    ] as const) {
      addToEntry(
        this.partnershipActivity,
        `${period}|${partnershipId}|${start}`,
        () => ({ productId, partnershipId, period, at: start, delta: { ...zeroActivity } }),
        delta,
      );
    }
  }

  addPartnership(productId: string, partnershipId: string, delta: PartnershipDelta): void {
    const entry = this.partnerships.get(partnershipId) ?? { productId, partnershipId, delta: { ...zeroPartnership } };
    addInto(entry.delta, delta);
    this.partnerships.set(partnershipId, entry);
  }

  /**
   * Writes every non-zero change; call once, inside the transaction, after its other writes. The
   * upserts are issued together (postgres.js pipelines them on the connection in issue order,
   * which keeps the lock order above) and cost one round trip.
   */
  async flush(tx: Queryable): Promise<void> {
    const shard = randomInt(shardCount);
    const writes: Promise<void>[] = [];
    for (const key of [...this.daily.keys()].sort()) {
      const entry = this.daily.get(key);
      if (entry && !isZero(entry.delta)) writes.push(addToDailyRollup(tx, { ...entry, shard }, entry.delta));
    }
    for (const key of [...this.hourly.keys()].sort()) {
      const entry = this.hourly.get(key);
      if (entry && !isZero(entry.delta)) writes.push(addToHourlyRollup(tx, { ...entry, shard }, entry.delta));
    }
    for (const key of [...this.partnershipActivity.keys()].sort()) {
      const entry = this.partnershipActivity.get(key);
      if (entry && !isZero(entry.delta)) {
        writes.push(addToPartnershipActivityRollup(tx, { ...entry, shard }, entry.delta));
      }
    }
    for (const partnershipId of [...this.partnerships.keys()].sort()) {
      const entry = this.partnerships.get(partnershipId);
      if (entry && !isZero(entry.delta)) writes.push(addToPartnershipRollup(tx, { ...entry, shard }, entry.delta));
    }
    this.daily.clear();
    this.hourly.clear();
    this.partnershipActivity.clear();
    this.partnerships.clear();
    await Promise.all(writes);
  }
}
