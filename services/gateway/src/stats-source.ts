import type { LedgerService } from "@affiliate/proto/ledger";
import type { PartnershipFigures, PartnershipStats } from "@affiliate/rest-shapes/figures";
import { ContractViolation } from "@affiliate/rest-shapes/mappers";
import type { Client } from "@connectrpc/connect";

export type { CommissionBreakdown, PartnershipFigures, PartnershipStats } from "@affiliate/rest-shapes/figures";

/**
 * Where partnership figures come from. The gateway owns no numbers: they belong to the ledger,
 * and the gateway only composes them into the partnership JSON.
 */
export interface PartnershipStatsSource {
  /** Figures of a whole page of partnerships (at most 100) in one call; every id is in the map. */
  statsFor(productId: string, partnershipIds: readonly string[]): Promise<Map<string, PartnershipStats>>;
  /** One partnership's figures and commission breakdown, in one call. */
  breakdownFor(productId: string, partnershipId: string): Promise<PartnershipFigures>;
}

/**
 * The ledger's BatchGetPartnershipStats: one call per page of partnerships (the ledger answers
 * every requested id, zeros for one without activity) and one call for a single read. An id the
 * ledger leaves out breaks its contract and is answered as 500, never shown as zeros.
 */
export function ledgerStats(ledger: Client<typeof LedgerService>): PartnershipStatsSource {
  const figuresOf = async (productId: string, partnershipIds: readonly string[]) => {
    const { stats } = await ledger.batchGetPartnershipStats({ productId, partnershipIds: [...partnershipIds] });
    return new Map(
      partnershipIds.map((id): [string, PartnershipFigures] => {
        const figures = stats[id];
        if (!figures) throw new ContractViolation(`partnership ${id} missing from the ledger's stats`);
        return [
          id,
          {
            stats: {
              clicks: Number(figures.clicks),
              conversions: Number(figures.conversions),
              earned_cents: figures.earnedCents,
            },
            breakdown: {
              pending_count: Number(figures.pendingCount),
              approved_count: Number(figures.approvedCount),
              pending_amount_cents: figures.pendingAmountCents,
              approved_amount_cents: figures.approvedAmountCents,
            },
          },
        ];
      }),
    );
  };
  return {
    async statsFor(productId, partnershipIds) {
      const figures = await figuresOf(productId, partnershipIds);
      return new Map([...figures].map(([id, { stats }]) => [id, stats]));
    },
    async breakdownFor(productId, partnershipId) {
      const figures = (await figuresOf(productId, [partnershipId])).get(partnershipId);
      // figuresOf answers every id it was given or throws.
      return figures as PartnershipFigures;
    },
  };
}

/** The figures of `id` in a map from `statsFor`; a missing one is a bug, answered as 500. */
export function statsOf(figures: ReadonlyMap<string, PartnershipStats>, id: string): PartnershipStats {
  const stats = figures.get(id);
  if (!stats) throw new ContractViolation(`no stats for partnership ${id}`);
  return stats;
}
