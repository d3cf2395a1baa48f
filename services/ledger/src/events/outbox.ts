import { enqueueDomainEvent, enqueueDomainEvents, type Queryable } from "@affiliate/platform";
import { type DomainEvent, ledgerEvents } from "@affiliate/proto/events";
import { commissionStatusToProto, commissionToProto, refundResultToProto } from "../codec.js";
import type { Commission, RefundResult } from "../domain/types.js";

/**
 * The commission as events carry it: ids, amounts and states, without the customer's email or
 * the merchant's free-text reason (which may quote it). Personal data kept out of the outbox
 * and the stream is personal data an erasure never has to chase there; consumers that need it
 * ask GetCommission.
 */
function commissionWithoutPersonalData(commission: Commission) {
  const proto = commissionToProto(commission);
  // A review's note is free text too.
  const review = proto.review ? { ...proto.review, note: "" } : undefined;
  return { ...proto, customerEmail: undefined, reason: "", review };
}

type CommissionEventKind =
  | "commissionCreated"
  | "commissionApproved"
  | "commissionRejected"
  | "commissionFlagged"
  | "commissionReviewed";

/** The registry entry of a commission event: one type for them all, they share their fields. */
const commissionDomainEvent = (kind: CommissionEventKind): DomainEvent<(typeof ledgerEvents)[typeof kind]["schema"]> =>
  ledgerEvents[kind];

/** Writes a commission event into the outbox of the caller's transaction. */
export function enqueueCommissionEvent(
  tx: Queryable,
  kind: CommissionEventKind,
  commission: Commission,
): Promise<void> {
  return enqueueDomainEvent(tx, commissionDomainEvent(kind), {
    commission: commissionWithoutPersonalData(commission),
  });
}

/**
 * Writes one commission event per commission into the outbox of `tx`, with one statement; each
 * continues the trace `traceOf` gives for it (the call that reported its payment), or this one.
 */
export function enqueueCommissionEvents(
  tx: Queryable,
  kind: CommissionEventKind,
  commissions: Commission[],
  traceOf: (commission: Commission) => Record<string, string> | undefined = () => undefined,
): Promise<void> {
  return enqueueDomainEvents(
    tx,
    commissionDomainEvent(kind),
    commissions.map((commission) => ({ commission: commissionWithoutPersonalData(commission) })),
    commissions.map(traceOf),
  );
}

/**
 * commission.refunded for one commission a refund changed: what payouts needs to recalculate an
 * open payout or claw back a paid commission, and the ids the notifier needs to read the rest
 * (the refund's reason, the customer) from the ledger for the affiliate's email and the webhook.
 */
export function enqueueRefundEvent(
  tx: Queryable,
  change: {
    before: Commission;
    after: Commission;
    paymentRefundedCents: number;
    refund: RefundResult;
    refundId: string;
  },
): Promise<void> {
  const { before, after } = change;
  return enqueueDomainEvent(tx, ledgerEvents.commissionRefunded, {
    commission: commissionWithoutPersonalData(after),
    previousAmountCents: BigInt(before.amountCents),
    newAmountCents: BigInt(after.amountCents),
    previousStatus: commissionStatusToProto[before.status],
    clawbackCents: BigInt(before.status === "paid" ? before.amountCents - after.amountCents : 0),
    paymentRefundedCents: BigInt(change.paymentRefundedCents),
    refund: refundResultToProto(change.refund),
    refundId: change.refundId,
  });
}
