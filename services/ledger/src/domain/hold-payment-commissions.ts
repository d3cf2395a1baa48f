import { characterCount } from "@affiliate/contract-rules";
import { DomainError, type Sql, type TransactionSql } from "@affiliate/platform";
import { getCommissionsOfEvents, lockCommissionsOfEvent } from "../store/commissions.js";
import { getHold, type HoldRow, insertHold, setHoldReason } from "../store/holds.js";
import { lockPaymentOf, type PaymentRow } from "../store/refunds.js";
import type { Commission, HoldReason } from "./types.js";

/** A hold as a payment provider names it: its id for the hold (a dispute's id) and the payment's. */
export interface HoldTarget {
  productId: string;
  /** The payment's external_id as tracked. */
  externalId: string;
  /** The provider's id of what holds the payment ("dp_…" for a Stripe dispute): one hold per id. */
  holdId: string;
  reason: HoldReason;
}

export interface HoldOutcome {
  /** The payment's commissions after the call, level 1 first. */
  commissions: Commission[];
  /** True when this hold id was recorded already (held, or closed): the call changed nothing. */
  replayed: boolean;
}

export function assertValidHoldTarget(target: HoldTarget): void {
  const errors: Record<string, string[]> = {};
  if (target.externalId === "" || characterCount(target.externalId) > 255) errors.external_id = ["Required"];
  if (target.holdId === "" || characterCount(target.holdId) > 128) errors.hold_id = ["Must be 1-128 characters"];
  if (Object.keys(errors).length > 0) throw new DomainError("invalid_argument", "Validation failed", errors);
}

/**
 * Locks the live payment the hold names, and reads the hold recorded under its id, if any. Every
 * hold and close of a payment starts here: the payment's lock serialises them with each other
 * and with its refunds, and they lock its commissions next, as refunds do.
 */
export async function lockPaymentAndHold(
  tx: TransactionSql,
  target: HoldTarget,
): Promise<{ payment: PaymentRow; hold: HoldRow | undefined }> {
  const payment = await lockPaymentOf(tx, target.productId, { externalId: target.externalId });
  if (!payment) throw new DomainError("not_found", "No payment matches the identifier for this product");
  const hold = await getHold(tx, target.productId, target.holdId);
  if (hold && hold.eventId !== payment.id) {
    throw DomainError.withInfo("already_exists", `Hold ${target.holdId} is recorded for another payment`, {
      reason: "hold_of_another_payment",
      details: { hold_id: target.holdId },
    });
  }
  return { payment, hold };
}

/** A commission a hold takes: one still to be paid that no payout has claimed. */
const holdable = (c: Commission) => (c.status === "pending" || c.status === "approved") && c.payoutId === null;

/**
 * Holds a payment's commissions (both levels) while its payment is disputed (contract section
 * 13): held, they keep their status and amount, but the hold sweep does not approve them and no
 * payout claims them until the hold is closed. Idempotent by the hold id: a repeat, or an
 * opening that arrives after its closing, changes nothing.
 *
 * A commission already claimed by a payout (or paid) is not held: it stays where it is, and a
 * lost dispute refunds it like any refund (recalculating its open payout, or clawing back what
 * was paid). Claims lock commissions and check `hold_reason` again after waiting, and this locks
 * them before deciding, so a commission is either held or in a payout, never both.
 */
export async function holdPaymentCommissions(sql: Sql, target: HoldTarget): Promise<HoldOutcome> {
  assertValidHoldTarget(target);
  return sql.begin(async (tx) => {
    const { payment, hold } = await lockPaymentAndHold(tx, target);
    if (hold) return { commissions: await getCommissionsOfEvents(tx, [payment.id]), replayed: true };
    await insertHold(tx, { ...target, eventId: payment.id, state: "held" });
    const commissions = await lockCommissionsOfEvent(tx, payment.id);
    const taken = commissions.filter((c) => holdable(c) && c.holdReason === null).map((c) => c.id);
    await setHoldReason(tx, taken, target.reason);
    return {
      commissions: commissions.map((c) => (taken.includes(c.id) ? { ...c, holdReason: target.reason } : c)),
      replayed: false,
    };
  });
}
