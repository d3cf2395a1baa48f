import type { LedgerService } from "@affiliate/proto/ledger";
import type { Client } from "@connectrpc/connect";
import { ContractViolation } from "./mappers.js";

/** All-time figures of one partnership, as the public JSON names them. */
export interface PartnershipStats {
  clicks: number;
  conversions: number;
  earned_cents: number;
}

/** The commission breakdown shown on a single partnership read. */
export interface CommissionBreakdown {
  pending_count: number;
  approved_count: number;
  pending_amount_cents: number;
  approved_amount_cents: number;
}

/** Everything a single partnership read shows beyond the partnership itself. */
export interface PartnershipFigures {
  stats: PartnershipStats;
  breakdown: CommissionBreakdown;
}

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
              earned_cents: Number(figures.earnedCents),
            },
            breakdown: {
              pending_count: Number(figures.pendingCount),
              approved_count: Number(figures.approvedCount),
              pending_amount_cents: Number(figures.pendingAmountCents),
              approved_amount_cents: Number(figures.approvedAmountCents),
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
