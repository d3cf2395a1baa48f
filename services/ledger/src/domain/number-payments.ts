/**
 * Payment numbering (contract section 12): where a payment stands in its customer's history with
 * the partnership it is attributed to, which the commission rules' limits read. Recording numbers
 * live payments and counts them (customer_payment_counters, rows locked until commit); sandbox
 * payments and previews are numbered as the customer's next live payment and count nothing.
 */
import { createHash } from "node:crypto";
import type { Queryable } from "@affiliate/platform";
import { addPayments, type CounterKey, counterKeyOf, recordedPayments } from "../store/payment-counters.js";
import type { EventRow } from "../store/tracking-events.js";
import type { PaymentHistory } from "./types.js";

/**
 * Who "the customer" is for the limits: provider_customer_id, else the (normalised) email, as a
 * SHA-256 key so the counters hold neither. undefined for a payment with neither: it is its own
 * first payment.
 */
export function customerKey(payment: {
  providerCustomerId?: string | null | undefined;
  customerEmail?: string | null | undefined;
}): string | undefined {
  const identity =
    payment.providerCustomerId != null
      ? `pcid:${payment.providerCustomerId}`
      : payment.customerEmail != null
        ? `email:${payment.customerEmail}`
        : undefined;
  return identity === undefined ? undefined : createHash("sha256").update(identity, "utf8").digest("hex");
}

/** The history of a payment with no earlier payment of its customer (or no customer at all). */
export const firstPayment = (occurredAt: Date): PaymentHistory => ({ paymentNumber: 1, firstPaymentAt: occurredAt });

/**
 * The history of the payment after `recorded` earlier ones (anchored at `firstPaymentAt` when
 * there were any).
 */
export function nextPayment(
  recorded: { payments: number; firstPaymentAt: Date } | undefined,
  occurredAt: Date,
): PaymentHistory {
  return recorded && recorded.payments > 0
    ? { paymentNumber: recorded.payments + 1, firstPaymentAt: recorded.firstPaymentAt }
    : firstPayment(occurredAt);
}

/** A payment's counter: the customer's payments to the partnership it is attributed to; undefined without a customer. */
export function counterOf(
  event: Pick<EventRow, "eventType" | "productId" | "partnershipId" | "providerCustomerId" | "customerEmail">,
): CounterKey | undefined {
  if (event.eventType !== "payment" || event.partnershipId === null) return undefined;
  const key = customerKey(event);
  return key === undefined
    ? undefined
    : { productId: event.productId, partnershipId: event.partnershipId, customerKey: key };
}

/**
 * Numbers the attributed live payments being recorded (in the caller's transaction): each
 * customer's counter gains its payments of the batch, in batch order, after those recorded
 * before; the counter rows stay locked until commit (addPayments).
 */
export async function numberPayments(tx: Queryable, payments: EventRow[]): Promise<Map<string, PaymentHistory>> {
  const byCounter = new Map<string, { key: CounterKey; events: EventRow[] }>();
  const histories = new Map<string, PaymentHistory>();
  for (const event of payments) {
    const key = counterOf(event);
    if (!key) {
      histories.set(event.id, firstPayment(event.occurredAt));
      continue;
    }
    const group = byCounter.get(counterKeyOf(key)) ?? { key, events: [] };
    group.events.push(event);
    byCounter.set(counterKeyOf(key), group);
  }
  const before = await addPayments(
    tx,
    [...byCounter.values()].map(({ key, events }) => ({
      ...key,
      payments: events.length,
      firstPaymentAt: (events[0] as EventRow).occurredAt,
      firstEventId: (events[0] as EventRow).id,
    })),
  );
  for (const [counter, { events }] of byCounter) {
    let recorded = before.get(counter);
    for (const event of events) {
      const history = nextPayment(recorded, event.occurredAt);
      histories.set(event.id, history);
      recorded = { payments: history.paymentNumber, firstPaymentAt: history.firstPaymentAt };
    }
  }
  return histories;
}

/** The histories of payments numbered without counting (sandbox): each as the next live payment of its customer. */
export async function nextLivePayments(sql: Queryable, payments: EventRow[]): Promise<Map<string, PaymentHistory>> {
  const keys = new Map(payments.map((event) => [event.id, counterOf(event)]));
  const recorded = await recordedPayments(
    sql,
    [...keys.values()].filter((key): key is CounterKey => key !== undefined),
  );
  return new Map(
    payments.map((event) => {
      const key = keys.get(event.id);
      return [event.id, nextPayment(key ? recorded.get(counterKeyOf(key)) : undefined, event.occurredAt)];
    }),
  );
}
