import { anyPaymentRecorded, resolvePaymentIds } from "../store/customers.js";
import { type EventJob, lockPaymentIds, wakeWaitersOf } from "../store/events.js";
import { type ApplyDeps, type Decision, done } from "./applying.js";
import type { PaymentNotFound } from "./ports.js";

/** How long a refund or dispute waits for its payment before it fails (contract section 13). */
export const paymentWaitMs = 72 * 60 * 60 * 1000;
/** A waiting event is also looked at this often (a payment recorded wakes it at once). */
const waitingRecheckMs = 10 * 60 * 1000;

/**
 * A refund's or a dispute's way to its payment: `apply` is tried on each id the event names the
 * payment by (resolved through the recorded aliases) until the ledger knows one; when it knows
 * none yet, the event waits for the payment.
 */
export async function firstKnownPayment(
  deps: ApplyDeps,
  row: EventJob,
  paymentIds: string[],
  apply: (externalId: string) => Promise<Decision | PaymentNotFound>,
): Promise<Decision> {
  for (const externalId of await resolvePaymentIds(deps.sql, row.productId, paymentIds)) {
    const decision = await apply(externalId);
    if ("record" in decision) return decision;
  }
  return waitForPayment(deps, row, paymentIds);
}

/** A refund or dispute before its payment: it waits (woken when the payment is recorded), 72 hours at most. */
function waitForPayment(deps: ApplyDeps, row: EventJob, paymentIds: string[]): Decision {
  const now = deps.clock().getTime();
  const deadline = row.receivedAt.getTime() + paymentWaitMs;
  const named = paymentIds.length > 0 ? paymentIds.join(" or ") : "(none named)";
  if (paymentIds.length === 0) return done("failed", "The event names no payment");
  if (now >= deadline) return done("failed", `Payment ${named} did not arrive within 72 hours`);
  return {
    record: {
      outcome: "waiting",
      detail: `Waiting for payment ${named}`,
      nextAttemptAt: new Date(Math.min(now + waitingRecheckMs, deadline)),
      awaitsPayment: paymentIds,
    },
    // The payment may have been recorded since this attempt asked the ledger, its wake-up passing
    // this row by: under the payment's lock, either it wakes this row after this commits, or this
    // sees it recorded and is due at once.
    effects: async (tx) => {
      await lockPaymentIds(tx, row.productId, paymentIds);
      if (await anyPaymentRecorded(tx, row.productId, paymentIds)) {
        await wakeWaitersOf(tx, row.productId, paymentIds, deps.clock());
      }
    },
  };
}
