import type { PayoutDetails } from "@affiliate/contract-rules";

/**
 * What the payouts use cases need from other services, in the domain's words. The adapters in
 * rpc/downstream.ts implement them over Connect; tests can back them with in-memory routers.
 */

/** A partnership's approved commissions that are in no payout yet. */
export interface PayableBalance {
  partnershipId: string;
  /** Their sum: a bigint, exact however many there are. */
  amountCents: bigint;
  commissionCount: number;
}

/** One partnership's approved, unlinked commissions asked for one payout. */
export interface PayoutClaim {
  partnershipId: string;
  payoutId: string;
}

/** A commission the ledger linked to a payout, at its current amount. */
export interface ClaimedCommission {
  commissionId: string;
  payoutId: string;
  /** One commission: at most the 100,000,000,000-cent payment it derives from, so a number. */
  amountCents: number;
}

/** The ledger owns commissions; payouts asks it to link, and unlink, them. */
export interface Ledger {
  listPayableBalances(productId: string): Promise<PayableBalance[]>;
  /**
   * For each claim, links the partnership's approved, unlinked commissions to the claim's payout
   * id, and returns every commission linked to those payout ids. Idempotent per payout id; the
   * ledger takes at most 1000 claims per call.
   */
  claimCommissions(productId: string, claims: PayoutClaim[]): Promise<ClaimedCommission[]>;
  /** Unlinks the payouts' unpaid commissions (at most 1000 ids). Idempotent. */
  unlinkCommissions(productId: string, payoutIds: string[]): Promise<void>;
}

/** Partners owns programs and partnerships. */
export interface Partners {
  payoutMinimumCents(productId: string): Promise<bigint>;
  /** The program's currency, uppercase ISO 4217 ("USD"). */
  programCurrency(productId: string): Promise<string>;
  /**
   * The payout methods (in clear: for the export alone) of those of `partnershipIds` that have
   * one, by partnership id. Any number of ids: the adapter batches them.
   */
  payoutMethods(productId: string, partnershipIds: string[]): Promise<Map<string, PayoutDetails>>;
  /** The ids among `partnershipIds` that are active partnerships of the product. */
  activePartnerships(productId: string, partnershipIds: string[]): Promise<Set<string>>;
  /** Every product, for the scheduled generation. */
  listProductIds(): Promise<string[]>;
}
