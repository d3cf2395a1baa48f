import {
  type DurableConsumer,
  decodeEvent,
  type JetStreamClient,
  type Logger,
  type Sql,
  startDurableConsumer,
  streamName,
  type TransactionSql,
  UndecodableEvent,
} from "@affiliate/platform";
import { ledgerEvents } from "@affiliate/proto/events";
import { CommissionStatus } from "@affiliate/proto/ledger";
import type { JetStreamManager } from "nats";
import {
  applyCommissionRefund,
  type CommissionRefund,
  type RefundOutcome,
  refundChangesNothing,
} from "../domain/apply-commission-refund.js";

export const commissionRefundedDurable = "payouts_commission_refunded";

/** The domain's view of a CommissionRefunded event; UndecodableEvent when it cannot be one. */
export function decodeCommissionRefunded(eventId: string, data: Uint8Array): CommissionRefund {
  const event = decodeEvent(ledgerEvents.commissionRefunded, data);
  const commission = event.commission;
  if (!commission?.id || !commission.productId || !commission.partnershipId) {
    throw new UndecodableEvent("CommissionRefunded without a commission");
  }
  return {
    eventId,
    productId: commission.productId,
    partnershipId: commission.partnershipId,
    commissionId: commission.id,
    payoutId: commission.payoutId || null,
    previousAmountCents: Number(event.previousAmountCents),
    newAmountCents: Number(event.newAmountCents),
    wasPaid: event.previousStatus === CommissionStatus.PAID,
    paymentRefundedCents: Number(event.paymentRefundedCents),
  };
}

/** The consumer's handler: decode, then apply in the transaction that records the event id. */
export function handleCommissionRefunded(
  tx: TransactionSql,
  message: { id: string; data: Uint8Array },
): Promise<RefundOutcome> {
  return applyCommissionRefund(tx, decodeCommissionRefunded(message.id, message.data));
}

/**
 * Follows the ledger's commission.refunded events with a durable consumer: each event is
 * applied exactly once (the platform records its id with the effect) and acked after commit.
 */
export function consumeCommissionRefunds(options: {
  sql: Sql;
  js: JetStreamClient;
  jsm: JetStreamManager;
  namespace: string;
  logger: Logger;
}): Promise<DurableConsumer> {
  return startDurableConsumer({
    ...options,
    stream: streamName({ service: ledgerEvents.commissionRefunded.service, namespace: options.namespace }),
    durable: commissionRefundedDurable,
    subject: ledgerEvents.commissionRefunded.subject,
    async handle(tx, message) {
      await handleCommissionRefunded(tx, message);
    },
    changesNothing: (message) => refundChangesNothing(decodeCommissionRefunded(message.id, message.data)),
  });
}
