import type { RefundResult } from "@affiliate/proto/ledger";
import type { PublicRefundResult } from "../schemas/refunds.js";
import { commissionStatusName } from "./commissions.js";
import { required } from "./common.js";

/** The spec 4.9 refund answer of the ledger's result (the payment's level-1 commission). */
export function toPublicRefund(result: RefundResult | undefined): PublicRefundResult {
  const refund = required(result, "refund result", "ledger");
  return {
    commission_id: refund.commissionId,
    partnership_id: refund.partnershipId,
    payment_amount_cents: Number(refund.paymentAmountCents),
    refund_amount_cents: Number(refund.refundAmountCents),
    previous_commission_cents: Number(refund.previousCommissionCents),
    new_commission_cents: Number(refund.newCommissionCents),
    status: commissionStatusName(refund.status),
    fully_refunded: refund.fullyRefunded,
  };
}
