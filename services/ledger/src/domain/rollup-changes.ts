import type { Queryable } from "@affiliate/platform";
import {
  type ActivityDelta,
  insertActivityDeltas,
  insertPartnershipDeltas,
  type MetricsDelta,
  type PartnershipDelta,
  type PartnershipFiguresDelta,
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

/**
 * The rollup changes of one transaction, gathered in memory and written once, just before commit,
 * as deltas: one row per product, partnership and UTC hour it touched, and one per partnership
 * whose all-time figures it changed. Two plain inserts: no row that a concurrent writer also
 * needs, so writers of one busy product (or one busy affiliate) never queue on each other. The
 * compaction folds the deltas into the rollups later; readers sum both (migration 0010).
 */
export class RollupChanges {
  private readonly activity = new Map<string, ActivityDelta>();
  private readonly partnerships = new Map<string, PartnershipFiguresDelta>();

  /**
   * Adds to the product's figures of the UTC hour of `at` (and so of its day), and, for activity
   * attributed to a partnership, to that partnership's: one delta serves all four rollups, so
   * they stay equal to the events and commissions they summarise.
   */
  addActivity(productId: string, at: Date, delta: MetricsDelta, partnershipId: string | null = null): void {
    const hour = `${at.toISOString().slice(0, 13)}:00:00.000Z`;
    const key = `${productId}|${partnershipId ?? ""}|${hour}`;
    const entry = this.activity.get(key) ?? { productId, partnershipId, hour, delta: { ...zeroActivity } };
    addInto(entry.delta, delta);
    this.activity.set(key, entry);
  }

  addPartnership(productId: string, partnershipId: string, delta: PartnershipDelta): void {
    const entry = this.partnerships.get(partnershipId) ?? { productId, partnershipId, delta: { ...zeroPartnership } };
    addInto(entry.delta, delta);
    this.partnerships.set(partnershipId, entry);
  }

  /**
   * Writes every non-zero change; call once, inside the transaction, after its other writes. The
   * two inserts are issued together (postgres.js pipelines them) and cost one round trip.
   */
  async flush(tx: Queryable): Promise<void> {
    const activity = [...this.activity.values()].filter((entry) => !isZero(entry.delta));
    const partnerships = [...this.partnerships.values()].filter((entry) => !isZero(entry.delta));
    this.activity.clear();
    this.partnerships.clear();
    await Promise.all([insertActivityDeltas(tx, activity), insertPartnershipDeltas(tx, partnerships)]);
  }
}
