import { type Partnership, PartnershipStatus, type PartnersService } from "@affiliate/proto/partners";
import type { Client } from "@connectrpc/connect";

/**
 * What the gateway reads from partners to compose answers owned by other services: the
 * affiliates behind a page of commissions, and the count of active affiliates in the stats.
 */
export interface PartnersDirectory {
  /**
   * The partnerships of these ids, by id, in one call (ids are deduplicated; at most 100 distinct,
   * a page). Ids of other products or unknown ids are absent from the map.
   */
  partnershipsByIds(productId: string, partnershipIds: readonly string[]): Promise<Map<string, Partnership>>;
  /** How many of the product's partnerships are `active` now (contract section 10). */
  countActivePartnerships(productId: string): Promise<number>;
}

/** BatchGetPartnerships takes at most this many ids per call. */
const batchGetLimit = 100;

/**
 * Partners' BatchGetPartnerships and CountPartnerships: one RPC per 100 items (a payout
 * generation's answer can name thousands of partnerships), never one per item.
 */
export function partnersDirectory(partners: Client<typeof PartnersService>): PartnersDirectory {
  return {
    async partnershipsByIds(productId, partnershipIds) {
      const unique = [...new Set(partnershipIds)];
      if (unique.length === 0) return new Map();
      const batches: string[][] = [];
      for (let start = 0; start < unique.length; start += batchGetLimit) {
        batches.push(unique.slice(start, start + batchGetLimit));
      }
      const answers = await Promise.all(
        batches.map((partnershipIds) => partners.batchGetPartnerships({ productId, partnershipIds })),
      );
      return new Map(answers.flatMap(({ partnerships }) => partnerships.map((p) => [p.id, p] as const)));
    },
    async countActivePartnerships(productId) {
      const { count } = await partners.countPartnerships({ productId, status: PartnershipStatus.ACTIVE });
      return Number(count);
    },
  };
}
