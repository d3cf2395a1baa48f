/**
 * What a provider's event asks of the ledger, in this service's words: a provider adapter
 * (providers/stripe) turns each event into one command, and the use cases apply commands without
 * knowing any provider's payloads.
 */

/**
 * Who referred the customer, as the event says it: a referral code (from metadata, a promotion
 * code mapped to a partnership, or a session's client_reference_id: `source`) or a tracked visitor.
 */
export type Referral = { referralCode: string; source: "metadata" | "coupon" | "link" } | { visitorId: string };

/** The customer an event is about, at the provider. */
export interface ProviderCustomer {
  /** The provider's customer id ("cus_…"), when the event names one. */
  customerId?: string | undefined;
  email?: string | undefined;
}

export type ProviderCommand =
  /** A referred customer: recorded once per customer as a signup attributed to the referral. */
  | ({ kind: "signup"; referral?: Referral | undefined; promotionCodes: string[]; occurredAt: Date } & ProviderCustomer)
  /** A payment: external_id is the provider's id of the paid thing (invoice, payment intent). */
  | ({
      kind: "payment";
      externalId: string;
      amountCents: number;
      currency: string;
      occurredAt: Date;
      referral?: Referral | undefined;
      /** The promotion codes (ids and codes) its discounts used: a mapped one attributes it. */
      promotionCodes: string[];
      /** Other ids the provider's refunds and disputes may name this payment by. */
      aliases: string[];
    } & ProviderCustomer)
  /** The payment's refunds add up to `refundedTotalCents` now (cumulative, so order does not matter). */
  | { kind: "refund"; paymentIds: string[]; refundedTotalCents: number; currency: string }
  /** A dispute opened on the payment: its commissions are held. */
  | { kind: "hold"; paymentIds: string[]; disputeId: string }
  /** The dispute was lost: the payment is refunded in full. */
  | { kind: "dispute_lost"; paymentIds: string[]; disputeId: string }
  /**
   * The dispute closed in the merchant's favour: the hold is lifted. `closedAs` names how, for the
   * detail: won, or an inquiry closed without becoming a chargeback (`warning_closed`).
   */
  | { kind: "release"; paymentIds: string[]; disputeId: string; closedAs: "won" | "warning_closed" }
  /**
   * Nothing to do; the detail says why. `customerId`: a customer's own event (or session) without
   * a referral, which still tells that customer's waiting payments not to wait any longer.
   */
  | { kind: "ignore"; detail: string; customerId?: string | undefined };

/** A verified provider event as the inbox stores it. */
export interface ReceivedEvent {
  eventId: string;
  type: string;
  livemode: boolean;
  createdAt: Date;
  /** The event as the provider sent it (JSON text), stored as it came. */
  payload: string;
  /** Which events must be applied one at a time, in order (one customer's, one charge's). */
  applyGroup: string;
}

export type EventOutcome = "applied" | "ignored" | "waiting" | "failed";

/** A stored event as the API lists it. */
export interface StoredEvent {
  id: string;
  eventId: string;
  type: string;
  livemode: boolean;
  receivedAt: Date;
  outcome: EventOutcome;
  detail: string;
  trackingEventId: string | null;
  commissionIds: string[];
}

/** A connection as it is shown: never its secrets. */
export interface ConnectionView {
  id: string;
  connectedAt: Date;
  hasApiKey: boolean;
  lastEventAt: Date | null;
  eventsReceived: number;
}
