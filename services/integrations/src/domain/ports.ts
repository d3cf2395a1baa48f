/**
 * What the integrations use cases need from other services, in the domain's words. The adapters
 * in rpc/downstream.ts implement them over Connect (the ledger's and partners' ordinary RPCs are
 * the only way in); tests can back them with in-memory routers.
 */
import type { ProviderCustomer, ReceivedEvent, Referral } from "./types.js";

/**
 * A call to another service that failed. `refused`: the service refused the command (invalid, not
 * found, in conflict), so asking again gets the same answer and the event fails with the
 * service's message; otherwise the failure is transient and the event is retried. Adapters turn
 * their transport's errors into it, so the use cases need no transport's vocabulary.
 */
export class ServiceCallFailed extends Error {
  override readonly name = "ServiceCallFailed";
  constructor(
    message: string,
    readonly refused: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** No payment has this external id (yet): a refund or dispute waits for it. */
export type PaymentNotFound = { kind: "payment_not_found" };

export interface TrackedRecord {
  trackingEventId: string;
  /** Empty when the event earned nothing (unattributed, sandbox, a signup). */
  commissionIds: string[];
  /** Empty when unattributed. */
  partnershipId: string;
  /** True when the ledger had recorded this payment's external id already. */
  replayed: boolean;
  /** Why an attributed payment earned nothing: past a commission rule's limit; undefined otherwise. */
  commissionSkipped?: "max_commission_months" | "max_commission_payments" | undefined;
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
  | PaymentNotFound
  /** The payment is recorded but earned no commission: nothing to refund. */
  | { kind: "no_commission" };

/** A dispute's opening, as the ledger carried it out. */
export type DisputeHoldOutcome =
  | {
      kind: "held";
      /** The dispute was recorded already (opened, or closed first): nothing changed. */
      replayed: boolean;
      /** The payment's commissions, level 1 first, and whether each is held. */
      commissions: { id: string; held: boolean; payoutId: string }[];
    }
  | PaymentNotFound;

/** A dispute's closing, as the ledger carried it out. */
export type DisputeCloseOutcome =
  | {
      kind: "closed";
      /** The dispute was closed already: nothing changed. */
      replayed: boolean;
      commissionIds: string[];
      /** What a lost dispute's refund applied now; 0 for a won one, a repeat, or nothing left. */
      refundedCents: number;
    }
  | PaymentNotFound;

/** The ledger owns tracking events, commissions and refunds. */
export interface Ledger {
  track(input: TrackInput): Promise<TrackedRecord>;
  /**
   * Whether a live payment recorded now would be attributed (a signup, a click), or is recorded
   * already (the same payment reported through the API): reads only.
   */
  wouldAttribute(input: TrackInput & { type: "payment" }): Promise<boolean>;
  /** Refunds the payment up to a cumulative total (the difference is applied, nothing when it is reached). */
  refundToTotal(input: {
    productId: string;
    externalId: string;
    refundedTotalCents: number;
    reason: string;
  }): Promise<RefundOutcome>;
  /**
   * Holds the payment's commissions while the dispute is open (neither approved nor paid out);
   * idempotent by the dispute id, whatever order its opening and closing come in.
   */
  holdForDispute(input: { productId: string; externalId: string; disputeId: string }): Promise<DisputeHoldOutcome>;
  /**
   * Closes the dispute: won lifts the hold; lost refunds the payment in full (void, or clawback
   * when paid), with `reason`. Idempotent by the dispute id.
   */
  closeDispute(input: {
    productId: string;
    externalId: string;
    disputeId: string;
    lost: boolean;
    reason: string;
  }): Promise<DisputeCloseOutcome>;
}

/** Partners owns programs: the currency every amount of a product is in. */
export interface Programs {
  currencyOf(productId: string): Promise<string>;
}

/** A customer as the provider's API answers it, for a payment that came before its customer's event. */
export interface FetchedCustomer {
  email?: string | undefined;
  /** metadata.referral_code, when set. */
  referralCode?: string | undefined;
  createdAt?: Date | undefined;
}

/**
 * The provider's customers, read through the connection's API key. `no_api_key` when the
 * connection has none (the payment then waits for the customer's event instead).
 */
export interface ProviderCustomers {
  fetch(productId: string, customerId: string): Promise<FetchedCustomer | "no_api_key">;
}

/** Why a delivery was refused (a signature that does not verify, a body that is no event); nothing of it is stored. */
export class RefusedDelivery extends Error {
  override readonly name = "RefusedDelivery";
}

/**
 * The provider's check of one delivery against the secrets the connection accepts now: its
 * signature over the raw bytes, read as an event to store. Throws RefusedDelivery.
 */
export type VerifyDelivery = (payload: Uint8Array, signature: string, secrets: string[], now: Date) => ReceivedEvent;
