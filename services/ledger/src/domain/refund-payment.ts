import { createHash } from "node:crypto";
import { characterCount, normalizeEmail } from "@affiliate/contract-rules";
import { DomainError, newId, type Sql, type TransactionSql } from "@affiliate/platform";
import { enqueueRefundEvent } from "../events/outbox.js";
import { lockCommissionsOfEvent } from "../store/commissions.js";
import {
  insertRefund,
  lockPaymentOf,
  lockPaymentsByEmailAndAmount,
  type PaymentRow,
  setCommissionAmount,
  setPaymentRefunded,
} from "../store/refunds.js";
import { recordCommissionChange } from "./commission-changes.js";
import { onceForKey } from "./idempotency.js";
import { amountAfterRefunds } from "./money.js";
import { RollupChanges } from "./rollup-changes.js";
import type { Commission, CommissionStatus, RefundResult } from "./types.js";

export type PaymentIdentification =
  | { commissionId: string }
  | { externalId: string }
  | { email: string; paymentAmountCents: number };

export interface RefundInput {
  productId: string;
  identification: PaymentIdentification;
  /** The incremental refund; undefined refunds what remains of the payment. */
  refundAmountCents?: number | undefined;
  /**
   * Instead of refundAmountCents: the payment's cumulative refunded total as its provider
   * reports it. The difference from the recorded total is applied, nothing when it is reached.
   */
  refundedTotalCents?: number | undefined;
  reason?: string | undefined;
  idempotencyKey?: string | undefined;
  /** Hash of the public request body without the key; derived from the input when empty. */
  requestFingerprint?: string | undefined;
}

/**
 * Records a refund of a live payment (spec 4.9, 3.1; contract 7). The payment row is locked, so
 * concurrent refunds of one payment apply one after another, each against the refunded total
 * the previous one left: the total never exceeds the payment and no commission goes below 0.
 * Both levels are recomputed from the cumulative total; the refund, the new amounts, the
 * rollups and one commission.refunded event per changed commission commit together.
 */
export async function refundPayment(
  sql: Sql,
  input: RefundInput,
): Promise<{ result: RefundResult; replayed: boolean }> {
  assertValidRefund(input);
  if (input.idempotencyKey === undefined) {
    return { result: await sql.begin((tx) => applyRefund(tx, input)), replayed: false };
  }
  const { value, replayed } = await onceForKey(
    sql,
    {
      productId: input.productId,
      key: input.idempotencyKey,
      fingerprint: input.requestFingerprint || fingerprintOf(input),
    },
    (tx) => applyRefund(tx, input),
  );
  return { result: value, replayed };
}

function assertValidRefund(input: RefundInput): void {
  const errors: Record<string, string[]> = {};
  if (input.reason !== undefined && characterCount(input.reason) > 500) errors.reason = ["At most 500 characters"];
  if (
    input.idempotencyKey !== undefined &&
    (input.idempotencyKey === "" || characterCount(input.idempotencyKey) > 128)
  ) {
    errors.idempotency_key = ["Must be 1-128 characters"];
  }
  if (input.refundAmountCents !== undefined && !Number.isSafeInteger(input.refundAmountCents)) {
    errors.refund_amount_cents = ["Must be an integer number of cents"];
  }
  if (input.refundedTotalCents !== undefined) {
    if (input.refundAmountCents !== undefined) errors.refunded_total_cents = ["Not with refund_amount_cents"];
    else if (!Number.isSafeInteger(input.refundedTotalCents) || input.refundedTotalCents < 0) {
      errors.refunded_total_cents = ["Must be a non-negative integer number of cents"];
    }
  }
  const id = input.identification;
  if ("email" in id && !Number.isSafeInteger(id.paymentAmountCents)) {
    errors.payment_amount_cents = ["Must be an integer number of cents"];
  }
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
}

/** A stable hash of what the request asks for, for callers that send no fingerprint. */
function fingerprintOf(input: RefundInput): string {
  const canonical = JSON.stringify([
    input.identification,
    input.refundAmountCents ?? null,
    input.reason ?? null,
    ...(input.refundedTotalCents === undefined ? [] : [input.refundedTotalCents]),
  ]);
  return createHash("sha256").update(canonical).digest("hex");
}

/** Finds and locks the payment the request identifies (spec 4.9's three strategies). */
async function lockIdentifiedPayment(
  tx: TransactionSql,
  productId: string,
  id: PaymentIdentification,
): Promise<PaymentRow> {
  const notFound = () => new DomainError("not_found", "No payment matches the identifier for this product");
  if (!("email" in id)) return (await lockPaymentOf(tx, productId, id)) ?? Promise.reject(notFound());
  const matches = await lockPaymentsByEmailAndAmount(tx, productId, normalizeEmail(id.email), id.paymentAmountCents, 2);
  if (matches.length === 0) throw notFound();
  if (matches.length > 1) {
    throw DomainError.withInfo("already_exists", "ambiguous_payment", {
      reason: "ambiguous_payment",
      details: {
        message: "The email and amount match several payments; identify the payment by external_id or commission_id",
      },
    });
  }
  return matches[0] as PaymentRow;
}

/**
 * Applies a refund in the caller's transaction (a lost dispute's closing refunds through it).
 * Two reads (the payment, then its commissions, each locked as it is read, in the order every
 * other locker uses), then every write issued at once: postgres.js pipelines them on the
 * transaction's connection in issue order. The transaction is five round trips, BEGIN and
 * COMMIT included, where one statement at a time made it fifteen.
 */
export async function applyRefund(tx: TransactionSql, input: RefundInput): Promise<RefundResult> {
  const payment = await lockIdentifiedPayment(tx, input.productId, input.identification);
  const commissions = await lockCommissionsOfEvent(tx, payment.id);
  const levelOne = commissions.find((c) => c.level === 1);
  // NOT_FOUND, as for a payment not found, but with a reason: a caller that must tell a payment
  // with nothing to refund from one not recorded yet (integrations, which waits for the latter)
  // reads the reason, never this message.
  if (!levelOne) {
    throw DomainError.withInfo("not_found", "No commission matches this payment", { reason: "no_commission" });
  }

  const remaining = payment.amountCents - payment.refundedCents;
  const toTotal = input.refundedTotalCents;
  // A provider's cumulative total already reached (a redelivery, or reports out of order): the
  // payment stays as it is, answered as it stands.
  if (toTotal !== undefined && toTotal <= payment.refundedCents) {
    return {
      commissionId: levelOne.id,
      partnershipId: levelOne.partnershipId,
      paymentAmountCents: payment.amountCents,
      refundAmountCents: 0,
      previousCommissionCents: levelOne.amountCents,
      newCommissionCents: levelOne.amountCents,
      status: levelOne.status,
      fullyRefunded: remaining === 0,
    };
  }
  if (remaining === 0) {
    throw DomainError.withInfo("already_exists", `Commission ${levelOne.id} is already fully refunded`, {
      reason: "already_refunded",
      details: { commission_id: levelOne.id },
    });
  }
  const refund = toTotal === undefined ? (input.refundAmountCents ?? remaining) : toTotal - payment.refundedCents;
  if (refund <= 0 || refund > payment.amountCents) {
    throw DomainError.withInfo(
      "out_of_range",
      "refund_amount_cents must be greater than 0 and at most the payment amount",
      {
        reason: "refund_out_of_range",
        details: { payment_amount_cents: payment.amountCents },
      },
    );
  }
  if (refund > remaining) {
    throw DomainError.withInfo(
      "out_of_range",
      `refund_amount_cents exceeds what remains of the payment after earlier refunds (${remaining} cents)`,
      {
        reason: "refund_out_of_range",
        details: { payment_amount_cents: payment.amountCents, refundable_cents: remaining },
      },
    );
  }

  const refundedAfter = payment.refundedCents + refund;
  const fullyRefunded = refundedAfter === payment.amountCents;
  const scale = { paymentCents: payment.amountCents, refundedCents: refundedAfter, fullyRefunded };
  const changes = commissions.flatMap((commission) => {
    const after = refundedCommission(commission, scale);
    return after ? [{ before: commission, after }] : [];
  });
  const levelOneAfter = changes.find((change) => change.before.id === levelOne.id)?.after ?? levelOne;
  const result: RefundResult = {
    commissionId: levelOne.id,
    partnershipId: levelOne.partnershipId,
    paymentAmountCents: payment.amountCents,
    refundAmountCents: refund,
    previousCommissionCents: levelOne.amountCents,
    newCommissionCents: levelOneAfter.amountCents,
    status: levelOneAfter.status,
    fullyRefunded,
  };

  const rollups = new RollupChanges();
  for (const { before, after } of changes) recordCommissionChange(rollups, before, before, after);
  const reason = input.reason ?? null;
  const refundId = newId("rfd");
  await Promise.all([
    setPaymentRefunded(tx, payment.id, refundedAfter),
    insertRefund(tx, {
      id: refundId,
      productId: input.productId,
      eventId: payment.id,
      commissionId: levelOne.id,
      amountCents: refund,
      reason,
      idempotencyKey: input.idempotencyKey ?? null,
    }),
    ...changes.map(({ before, after }) => setCommissionAmount(tx, before, { ...after, reason })),
    rollups.flush(tx),
    ...changes.map(({ before, after }) =>
      enqueueRefundEvent(tx, {
        before,
        after: { ...before, ...after, reason: reason ?? before.reason },
        paymentRefundedCents: refundedAfter,
        refund: result,
        refundId,
      }),
    ),
  ]);
  return result;
}

/**
 * One commission's new amount and status; undefined when the refund does not change it. A
 * rejected or refunded (already voided) commission stays as it is; any other is scaled in the
 * proportion of the payment left, and becomes refunded when nothing is left (a level-2 child
 * always in the same proportion as its parent).
 */
function refundedCommission(
  commission: Commission,
  scale: { paymentCents: number; refundedCents: number; fullyRefunded: boolean },
): { status: CommissionStatus; amountCents: number } | undefined {
  if (commission.status === "rejected" || commission.status === "refunded") return undefined;
  const next = {
    amountCents: amountAfterRefunds(commission.originalAmountCents, scale.paymentCents, scale.refundedCents),
    status: scale.fullyRefunded ? ("refunded" as const) : commission.status,
  };
  return next.amountCents === commission.amountCents && next.status === commission.status ? undefined : next;
}
