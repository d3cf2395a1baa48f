/**
 * The vocabulary of the fraud settings (contract section 18): partners validates and stores
 * them, the ledger applies them, the public REST shapes describe them. The signals themselves are
 * in the ledger (services/ledger/src/domain/fraud/signals.ts).
 */

/** Signals raised on a payment: they hold (flag) or reject its commissions. */
export const paymentSignals = ["self_referral", "refund_rate"] as const;
/** Signals raised on a click: a flagged click is stored as such and counted nowhere. */
export const clickSignals = ["duplicate_click", "bot"] as const;
export const fraudSignals = [...paymentSignals, ...clickSignals] as const;

export type PaymentSignal = (typeof paymentSignals)[number];
export type ClickSignal = (typeof clickSignals)[number];
export type FraudSignal = (typeof fraudSignals)[number];

/**
 * flag: a payment's commissions wait for the merchant's review; a click is stored flagged and not
 * counted. reject: a payment's commissions are created rejected (payment signals only: a click
 * carries no money, and a flagged one already counts nowhere). off: not checked.
 */
export const fraudActions = ["flag", "reject", "off"] as const;
export type FraudAction = (typeof fraudActions)[number];
export const clickSignalActions = ["flag", "off"] as const satisfies readonly FraudAction[];

export interface FraudSettings {
  selfReferral: FraudAction;
  duplicateClick: FraudAction;
  bot: FraudAction;
  refundRate: FraudAction;
  /** The refunded share (basis points) above which refund_rate is raised; null: not checked. */
  refundRateThresholdBps: number | null;
}

/** Every program starts with these: the checks on, refund_rate waiting for a threshold. */
export const defaultFraudSettings: Readonly<FraudSettings> = Object.freeze({
  selfReferral: "flag",
  duplicateClick: "flag",
  bot: "flag",
  refundRate: "flag",
  refundRateThresholdBps: null,
});

/** How far back refund_rate looks at a partnership's payments. */
export const refundRateWindowDays = 30;
