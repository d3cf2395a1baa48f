import { inBatches } from "@affiliate/platform";
import { type Partnership, PartnershipStatus, type PartnersService } from "@affiliate/proto/partners";
import type { Client } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";

/**
 * What the gateway reads from partners to compose answers owned by other services: the
 * affiliates behind a page of commissions, and the count of active affiliates in the stats.
 */
export interface PartnershipLookup {
  /**
   * The partnerships of these ids, by id (ids are deduplicated, and asked 100 per call). Ids of
   * other products or unknown ids are absent from the map.
   */
  partnershipsByIds(productId: string, partnershipIds: readonly string[]): Promise<Map<string, Partnership>>;
  /**
   * How many of the product's partnerships are `active` (contract section 10), as of at most
   * activeCountTtlMs ago.
   */
  countActivePartnerships(productId: string): Promise<number>;
}

export interface PartnershipLookupOptions {
  /**
   * How long a product's active count is reused (0: asked every time). Dashboards poll the stats,
   * and the count costs a fifth of a summary's CPU; a count a few seconds old reads the same.
   */
  activeCountTtlMs: number;
  /** The clock of the count's expiry; tests pass their own. */
  clock?: { now(): number };
}

/** BatchGetPartnerships takes at most this many ids per call. */
const batchGetLimit = 100;

/**
 * Partners' BatchGetPartnerships and CountPartnerships: one RPC per 100 items (a payout
 * generation's answer can name thousands of partnerships), never one per item.
 */
export function partnershipLookup(
  partners: Client<typeof PartnersService>,
  options: PartnershipLookupOptions,
): PartnershipLookup {
  const countActive = async (productId: string) =>
    Number((await partners.countPartnerships({ productId, status: PartnershipStatus.ACTIVE })).count);
  // fetch() shares one call among concurrent askers and keeps no failure.
  const activeCounts = new LRUCache<string, number>({
    max: 10_000,
    ttl: options.activeCountTtlMs,
    fetchMethod: countActive,
    // Read the clock on every lookup (not a copy refreshed each millisecond by a timer).
    ttlResolution: 0,
    ...(options.clock ? { perf: options.clock } : {}),
  });
  return {
    async partnershipsByIds(productId, partnershipIds) {
      const unique = [...new Set(partnershipIds)];
      if (unique.length === 0) return new Map();
      const answers = await Promise.all(
        inBatches(unique, batchGetLimit).map((partnershipIds) =>
          partners.batchGetPartnerships({ productId, partnershipIds }),
        ),
      );
      return new Map(answers.flatMap(({ partnerships }) => partnerships.map((p) => [p.id, p] as const)));
    },
    async countActivePartnerships(productId) {
      if (options.activeCountTtlMs === 0) return countActive(productId);
      return (await activeCounts.fetch(productId)) ?? countActive(productId);
    },
  };
}
