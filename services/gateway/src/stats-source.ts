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

/**
 * Where partnership figures come from. The gateway owns no numbers: they belong to the ledger,
 * and the gateway only composes them into the partnership JSON.
 */
export interface PartnershipStatsSource {
  /** Figures of a whole page of partnerships in one call; ids missing from the map have none. */
  statsFor(productId: string, partnershipIds: readonly string[]): Promise<Map<string, PartnershipStats>>;
  breakdownFor(productId: string, partnershipId: string): Promise<CommissionBreakdown>;
}

export const zeroStats: Readonly<PartnershipStats> = Object.freeze({ clicks: 0, conversions: 0, earned_cents: 0 });

export const zeroBreakdown: Readonly<CommissionBreakdown> = Object.freeze({
  pending_count: 0,
  approved_count: 0,
  pending_amount_cents: 0,
  approved_amount_cents: 0,
});

/**
 * Zeros for every partnership, until the ledger service exists; issue 3 replaces it with ledger
 * RPCs. Nothing is counted or stored here.
 */
export const noLedgerYet: PartnershipStatsSource = {
  async statsFor(_productId, partnershipIds) {
    return new Map(partnershipIds.map((id) => [id, { ...zeroStats }]));
  },
  async breakdownFor() {
    return { ...zeroBreakdown };
  },
};
