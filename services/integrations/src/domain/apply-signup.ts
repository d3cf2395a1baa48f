import { signupOfCustomer } from "../store/customers.js";
import { type EventJob, payloadOf, paymentsAwaitingCustomer } from "../store/events.js";
import { type ApplyDeps, type Decision, done } from "./applying.js";
import { customerArrived, customerSignedUp, earliest, referralOf } from "./customer-referral.js";
import type { ProviderCommand } from "./types.js";

/**
 * A referred customer (a customer's or a checkout session's referral): recorded once per
 * customer as a signup attributed to the referral, dated no later than the customer's payments
 * that wait for it, so they find it. A signup whose only referral is a promotion code mapped
 * to no affiliate, or whose customer's referral is recorded already, is ignored, saying why;
 * either way the customer's waiting payments go now.
 */
export async function applySignup(
  deps: ApplyDeps,
  row: EventJob,
  command: Extract<ProviderCommand, { kind: "signup" }>,
): Promise<Decision> {
  const { productId } = row;
  const { customerId } = command;
  const arrived = customerId ? customerArrived(deps, productId, customerId) : undefined;
  const referral = await referralOf(deps, productId, command);
  if (!referral) {
    const codes = command.promotionCodes.join(", ");
    return { ...done("ignored", `Promotion code ${codes} is mapped to no affiliate`), effects: arrived };
  }
  if (customerId) {
    const recorded = await signupOfCustomer(deps.sql, productId, customerId);
    if (recorded) {
      return {
        ...done("ignored", `The referral of customer ${customerId} is recorded already (${recorded})`, {
          trackingEventId: recorded,
        }),
        effects: arrived,
      };
    }
  }
  // A payment of this customer that came first, and waits, must find the signup before it.
  const occurredAt = customerId
    ? earliest(command.occurredAt, await waitingPaymentsTime(deps, productId, customerId))
    : command.occurredAt;
  const tracked = await deps.ledger.track({
    productId,
    testMode: !row.livemode,
    type: "signup",
    ...command,
    referral,
    occurredAt,
  });
  return {
    record: {
      outcome: "applied",
      detail: tracked.partnershipId
        ? `Signup recorded, attributed to partnership ${tracked.partnershipId}`
        : "Signup recorded; the referral matched no affiliate",
      trackingEventId: tracked.trackingEventId,
      nextAttemptAt: null,
    },
    effects: customerId ? customerSignedUp(deps, productId, customerId, tracked.trackingEventId) : undefined,
  };
}

/** When the earliest payment waiting for this customer occurred, so its signup can precede it. */
async function waitingPaymentsTime(deps: ApplyDeps, productId: string, customerId: string): Promise<Date | undefined> {
  let found: Date | undefined;
  for (const id of await paymentsAwaitingCustomer(deps.sql, productId, customerId)) {
    try {
      const command = deps.commandOf(await payloadOf(deps.sql, id));
      if (command.kind === "payment") found = earliest(command.occurredAt, found);
    } catch {
      // A payload that cannot be read fails on its own attempt; it moves no signup.
    }
  }
  return found;
}
