import type { ClaimedJob } from "@affiliate/platform";
import { countStripeEvent } from "../metrics.js";
import { type EventJob, payloadOf, recordAttempt } from "../store/events.js";
import { applyDisputeClosed } from "./apply-dispute-closed.js";
import { applyDisputeOpened } from "./apply-dispute-opened.js";
import { applyPayment } from "./apply-payment.js";
import { applyRefund } from "./apply-refund.js";
import { applySignup } from "./apply-signup.js";
import { type ApplyDeps, type Decision, done } from "./applying.js";
import { customerArrived } from "./customer-referral.js";
import { ServiceCallFailed } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/** Transient failures (a service unavailable) are retried this many times before the event fails. */
export const maxTransientAttempts = 12;

/**
 * Applies one stored event (the apply worker's job): maps it to a command, carries the command
 * out through its use case (one file each: apply-signup, apply-payment, apply-refund,
 * apply-dispute-opened, apply-dispute-closed), and records the outcome fenced by the job's
 * lease. Every command is safe to carry out again after a crash between the ledger's commit and
 * this record: a payment's external id makes its Track a replay, a refund goes to a cumulative
 * total, a signup is recorded once per customer. A service that cannot be reached leaves the
 * event waiting and retries with backoff; a refusal by the ledger is a failure with its message.
 */
export async function applyStoredEvent(deps: ApplyDeps, job: ClaimedJob<EventJob>): Promise<void> {
  const row = job.row;
  let decision: Decision;
  try {
    decision = await decide(deps, row);
  } catch (error) {
    decision = afterError(deps, row, error);
  }
  const recorded = await job.finish(async (tx) => {
    await recordAttempt(tx, row.id, decision.record);
    await decision.effects?.(tx);
  });
  // Counted once recorded: an attempt whose lease had passed to another claim counts there.
  if (recorded) countStripeEvent(decision.record.outcome);
}

async function decide(deps: ApplyDeps, row: EventJob): Promise<Decision> {
  const payload = await payloadOf(deps.sql, row.id);
  let command: ProviderCommand;
  try {
    command = deps.commandOf(payload);
  } catch (error) {
    // A payload without the fields its type has cannot become valid by trying again.
    return done("failed", `The event cannot be read: ${messageOf(error)}`);
  }
  switch (command.kind) {
    case "ignore": {
      const { customerId } = command;
      return {
        ...done("ignored", command.detail),
        effects: customerId ? customerArrived(deps, row.productId, customerId) : undefined,
      };
    }
    case "signup":
      return applySignup(deps, row, command);
    case "payment":
      return applyPayment(deps, row, command);
    case "refund":
      return applyRefund(deps, row, command);
    case "hold":
      return applyDisputeOpened(deps, row, command);
    case "dispute_lost":
    case "release":
      return applyDisputeClosed(deps, row, command);
  }
}

function afterError(deps: ApplyDeps, row: EventJob, error: unknown): Decision {
  if (error instanceof ServiceCallFailed && error.refused) {
    return done("failed", `The ledger refused it: ${error.message}`);
  }
  if (row.attempts + 1 >= maxTransientAttempts) {
    deps.logger.error({ err: error, eventId: row.eventId }, "stripe event failed after its retries");
    return done("failed", `Could not be applied after ${maxTransientAttempts} attempts: ${messageOf(error)}`);
  }
  deps.logger.warn({ err: error, eventId: row.eventId }, "stripe event not applied; will retry");
  const backoffMs = Math.min(1000 * 2 ** row.attempts, 5 * 60_000);
  return {
    record: {
      outcome: "waiting",
      detail: `Not applied yet, retrying: ${messageOf(error)}`,
      nextAttemptAt: new Date(deps.clock().getTime() + backoffMs),
    },
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
