/**
 * What the integrations use cases need from other services, in the domain's words. The adapters
 * in rpc/downstream.ts implement them over Connect (the ledger's and partners' ordinary RPCs are
 * the only way in); tests can back them with in-memory routers.
 */
import type { ProviderCustomer, Referral } from "./types.js";

export interface TrackedRecord {
  trackingEventId: string;
  /** Empty when the event earned nothing (unattributed, sandbox, a signup). */
  commissionIds: string[];
  /** Empty when unattributed. */
  partnershipId: string;
  /** True when the ledger had recorded this payment's external id already. */
  replayed: boolean;
}

export type TrackInput = {
  productId: string;
  /** Sandbox (a provider's test mode): stored, never counted, creates nothing. */
  testMode: boolean;
  occurredAt: Date;
  referral?: Referral | undefined;
} & ProviderCustomer &
  ({ type: "signup" } | { type: "payment"; externalId: string; amountCents: number });

export type RefundOutcome =
  | { kind: "refunded"; commissionId: string; appliedCents: number; fullyRefunded: boolean }
  /** No payment has this external id (yet). */
  | { kind: "payment_not_found" }
  /** The payment is recorded but earned no commission: nothing to refund. */
  | { kind: "no_commission" };

/** The ledger owns tracking events, commissions and refunds. */
export interface Ledger {
  track(input: TrackInput): Promise<TrackedRecord>;
  /**
   * Refunds the payment up to a cumulative total (the difference is applied, nothing when it is
   * reached); `refundedTotalCents` undefined refunds all that remains.
   */
  refundToTotal(input: {
    productId: string;
    externalId: string;
    refundedTotalCents?: number | undefined;
    reason: string;
  }): Promise<RefundOutcome>;
}

/** Partners owns programs: the currency every amount of a product is in. */
export interface Programs {
  currencyOf(productId: string): Promise<string>;
}
