// The figures a partnership read shows, as the public JSON names them. The ledger owns the
// numbers; the gateway composes them into the partnership it answers.

/** All-time figures of one partnership, as the public JSON names them. */
export interface PartnershipStats {
  clicks: number;
  conversions: number;
  /** A sum of cents: kept exact, as the ledger sends it (centsSumSchema). */
  earned_cents: bigint;
}

/** The commission breakdown shown on a single partnership read. */
export interface CommissionBreakdown {
  pending_count: number;
  approved_count: number;
  pending_amount_cents: bigint;
  approved_amount_cents: bigint;
}

/** Everything a single partnership read shows beyond the partnership itself. */
export interface PartnershipFigures {
  stats: PartnershipStats;
  breakdown: CommissionBreakdown;
}
