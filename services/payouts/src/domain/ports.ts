/**
 * What the payouts use cases need from other services, in the domain's words. The adapters in
 * rpc/downstream.ts implement them over Connect; tests can back them with in-memory routers.
 */

/** A partnership's approved commissions that are in no payout yet. */
export interface PayableBalance {
  partnershipId: string;
  amountCents: number;
  commissionCount: number;
}

export interface ClaimedCommission {
  commissionId: string;
  amountCents: number;
}

/** The ledger owns commissions; payouts asks it to link, and unlink, them. */
export interface Ledger {
  listPayableBalances(productId: string): Promise<PayableBalance[]>;
  /** Links the partnership's approved, unlinked commissions to `payoutId`. Idempotent per payout id. */
  claimCommissions(productId: string, partnershipId: string, payoutId: string): Promise<ClaimedCommission[]>;
  /** Unlinks the payout's unpaid commissions. Idempotent. */
  releaseCommissions(productId: string, payoutId: string): Promise<void>;
}

/** Partners owns programs and partnerships. */
export interface Partners {
  payoutMinimumCents(productId: string): Promise<number>;
  /** The ids among `partnershipIds` that are active partnerships of the product. */
  activePartnerships(productId: string, partnershipIds: string[]): Promise<Set<string>>;
  /** Every product, for the scheduled generation. */
  listProductIds(): Promise<string[]>;
}
