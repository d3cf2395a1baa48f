import type { TransactionSql } from "@affiliate/platform";
import { customerSeen, recordPaymentAliases, signupOfCustomer } from "../store/customers.js";
import { type EventJob, lockPaymentIds, wakeWaitersOf } from "../store/events.js";
import { type ApplyDeps, currencyMismatch, type Decision, done } from "./applying.js";
import { customerArrived, customerSignedUp, earliest, referralOf } from "./customer-referral.js";
import type { FetchedCustomer } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/**
 * How long a payment whose customer nothing attributes yet waits for the customer's own event
 * (contract section 17): Stripe does not promise order, and a customer.created with its referral
 * may arrive after the customer's first invoice.
 */
export const customerWaitMs = 10 * 60 * 1000;

/**
 * Why an attributed payment earned nothing, for its detail: "no commission" alone reads like an
 * unattributed payment, when the customer's renewals have only used up their commission rule.
 */
const limitReachedDetail = {
  max_commission_months: "the customer's first payment is max_commission_months ago or more",
  max_commission_payments: "the customer's max_commission_payments payments have earned already",
} as const;

/**
 * A payment: tracked in the ledger under the provider's id of the paid thing (a replay when it is
 * recorded already), in the program's currency only. A live payment that nothing attributes yet,
 * of a customer not seen yet, first waits for its customer's event (up to 10 minutes), or reads
 * the customer from the provider at once when the connection has an API key. Once recorded, the
 * refunds and disputes that wait for it are woken.
 */
export async function applyPayment(
  deps: ApplyDeps,
  row: EventJob,
  command: Extract<ProviderCommand, { kind: "payment" }>,
): Promise<Decision> {
  const { productId } = row;
  const testMode = !row.livemode;
  const mismatch = await currencyMismatch(deps, productId, command.currency);
  if (mismatch) return done("failed", mismatch);
  const referral = await referralOf(deps, productId, command);
  const payment = { productId, testMode, type: "payment" as const, ...command, referral };
  const { customerId } = command;
  let arrived: ((tx: TransactionSql) => Promise<void>) | undefined;
  if (!referral && customerId && !testMode && !(await customerSeen(deps.sql, productId, customerId))) {
    if (!(await deps.ledger.wouldAttribute(payment))) {
      const fetched = await deps.customers?.fetch(productId, customerId);
      if (fetched === undefined || fetched === "no_api_key") {
        const deadline = row.receivedAt.getTime() + customerWaitMs;
        if (deps.clock().getTime() < deadline) return waitForCustomer(deps, customerId, deadline);
      } else {
        // Read from the provider at once: the customer's referral is recorded as its event would have.
        arrived = await applyFetchedCustomer(deps, row, customerId, fetched, command.occurredAt);
      }
    }
  }
  const tracked = await deps.ledger.track(payment);
  const earned = tracked.commissionIds.length > 0;
  const detail = [
    `Payment ${command.externalId} of ${command.amountCents} cents recorded`,
    tracked.replayed ? " (it was recorded already)" : "",
    earned
      ? `; commissions ${tracked.commissionIds.join(", ")}`
      : testMode
        ? " as sandbox data"
        : tracked.commissionSkipped
          ? `; no commission: ${limitReachedDetail[tracked.commissionSkipped]}`
          : "; no commission",
  ].join("");
  const paymentIds = [command.externalId, ...command.aliases];
  return {
    record: {
      outcome: "applied",
      detail,
      trackingEventId: tracked.trackingEventId,
      commissionIds: tracked.commissionIds,
      nextAttemptAt: null,
    },
    effects: async (tx) => {
      await arrived?.(tx);
      await lockPaymentIds(tx, productId, paymentIds);
      await recordPaymentAliases(tx, productId, command.externalId, paymentIds);
      await wakeWaitersOf(tx, productId, paymentIds, deps.clock());
    },
  };
}

/**
 * A payment before its customer's event, read from the provider at once: the customer's referral
 * is recorded as a signup (no later than the payment), as its event would have recorded it.
 */
async function applyFetchedCustomer(
  deps: ApplyDeps,
  row: EventJob,
  customerId: string,
  fetched: FetchedCustomer,
  paymentAt: Date,
): Promise<(tx: TransactionSql) => Promise<void>> {
  const { productId } = row;
  if (!fetched.referralCode || (await signupOfCustomer(deps.sql, productId, customerId))) {
    return customerArrived(deps, productId, customerId);
  }
  const tracked = await deps.ledger.track({
    productId,
    testMode: !row.livemode,
    type: "signup",
    referral: { referralCode: fetched.referralCode, source: "metadata" },
    customerId,
    email: fetched.email,
    occurredAt: earliest(paymentAt, fetched.createdAt),
  });
  return customerSignedUp(deps, productId, customerId, tracked.trackingEventId);
}

/** A payment whose customer nothing attributes yet: it waits for the customer's event, 10 minutes at most. */
function waitForCustomer(deps: ApplyDeps, customerId: string, deadline: number): Decision {
  const now = deps.clock().getTime();
  return {
    record: {
      outcome: "waiting",
      detail: `Waiting for customer ${customerId}'s customer.created or checkout session (up to 10 minutes): Stripe does not promise order`,
      // Woken when the customer's event is applied; recorded as it is at the deadline.
      nextAttemptAt: new Date(Math.min(deadline, now + customerWaitMs)),
      awaitsCustomer: customerId,
    },
  };
}
