import { characterCount } from "@affiliate/contract-rules";
import { DomainError, type Sql } from "@affiliate/platform";
import { getCommissionsOfEvents, lockCommissionsOfEvent } from "../store/commissions.js";
import { closeHold, insertHold, openHoldReasonOf, setHoldReason } from "../store/holds.js";
import {
  assertValidHoldTarget,
  type HoldOutcome,
  type HoldTarget,
  lockPaymentAndHold,
} from "./hold-payment-commissions.js";
import { applyRefund } from "./refund-payment.js";
import type { HoldResolution, RefundResult } from "./types.js";

export interface CloseHoldInput extends HoldTarget {
  resolution: HoldResolution;
  /** The refund's reason when `resolution` is refunded; at most 500 characters. */
  refundReason?: string | undefined;
}

export interface CloseHoldOutcome extends HoldOutcome {
  /** The refund this call applied; null when it applied none (lifted, a repeat, nothing left). */
  refund: RefundResult | null;
}

/**
 * Ends a hold (contract section 13), in one transaction with the payment locked:
 *
 * - lifted: the commissions are no longer held (unless another hold of the payment is still
 *   open); a pending one is approved by the next sweep once its hold period is over.
 * - refunded: the hold is lifted and the payment refunded in full through the ordinary refund
 *   (refund-payment.ts): held commissions are voided, one in an open payout is recalculated there,
 *   a paid one is clawed back, and commission.refunded brings the affiliate's email.
 *
 * Idempotent by the hold id: once the hold is closed, a repeat changes nothing. A closing that
 * arrives before its opening records the hold closed, so the opening holds nothing.
 */
export async function closePaymentHold(sql: Sql, input: CloseHoldInput): Promise<CloseHoldOutcome> {
  assertValidHoldTarget(input);
  if (input.refundReason !== undefined && characterCount(input.refundReason) > 500) {
    throw DomainError.invalidField("refund_reason", "At most 500 characters");
  }
  return sql.begin(async (tx) => {
    const { payment, hold } = await lockPaymentAndHold(tx, input);
    if (hold && hold.state !== "held") {
      return { commissions: await getCommissionsOfEvents(tx, [payment.id]), replayed: true, refund: null };
    }
    if (hold) await closeHold(tx, input.productId, input.holdId, input.resolution);
    else await insertHold(tx, { ...input, eventId: payment.id, state: input.resolution });

    const commissions = await lockCommissionsOfEvent(tx, payment.id);
    if (!(await openHoldReasonOf(tx, payment.id))) {
      await setHoldReason(
        tx,
        // A review's hold is the merchant's to lift (review-commission.ts), not the dispute's.
        commissions.filter((c) => c.holdReason === "dispute").map((c) => c.id),
        null,
      );
    }
    const refundable =
      input.resolution === "refunded" &&
      commissions.some((c) => c.level === 1) &&
      payment.refundedCents < payment.amountCents;
    const refund = refundable
      ? await applyRefund(tx, {
          productId: input.productId,
          identification: { externalId: input.externalId },
          reason: input.refundReason,
        })
      : null;
    return { commissions: await getCommissionsOfEvents(tx, [payment.id]), replayed: false, refund };
  });
}
