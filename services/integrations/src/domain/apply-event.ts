import type { ClaimedJob, Logger, Sql, TransactionSql } from "@affiliate/platform";
import { Code, ConnectError } from "@connectrpc/connect";
import { countStripeEvent } from "../metrics.js";
import {
  anyPaymentRecorded,
  recordCustomerSignup,
  recordPaymentAliases,
  resolvePaymentIds,
  signupOfCustomer,
} from "../store/customers.js";
import {
  type AttemptRecord,
  type EventJob,
  lockPaymentIds,
  payloadOf,
  recordAttempt,
  wakeWaitersOf,
} from "../store/events.js";
import type { DisputeCloseOutcome, DisputeHoldOutcome, Ledger, Programs } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/** How long a refund or dispute waits for its payment before it fails (contract section 13). */
export const paymentWaitMs = 72 * 60 * 60 * 1000;
/** A waiting event is also looked at this often (a payment recorded wakes it at once). */
const waitingRecheckMs = 10 * 60 * 1000;
/** Transient failures (a service unavailable) are retried this many times before the event fails. */
export const maxTransientAttempts = 12;

export interface ApplyDeps {
  sql: Sql;
  ledger: Ledger;
  programs: Programs;
  /** The provider adapter's reading of a stored payload. */
  commandOf(payload: unknown): ProviderCommand;
  clock: () => Date;
  logger: Logger;
}

/**
 * Why an attributed payment earned nothing, for its detail: "no commission" alone reads like an
 * unattributed payment, when the customer's renewals have only used up their commission rule.
 */
const limitReachedDetail = {
  max_commission_months: "the customer's first payment is max_commission_months ago or more",
  max_commission_payments: "the customer's max_commission_payments payments have earned already",
} as const;

/** What an attempt decided, and what commits with it. */
interface Decision {
  record: AttemptRecord;
  effects?: (tx: TransactionSql) => Promise<void>;
}

const done = (outcome: AttemptRecord["outcome"], detail: string, extra: Partial<AttemptRecord> = {}): Decision => ({
  record: { outcome, detail, nextAttemptAt: null, ...extra },
});

/**
 * Applies one stored event (the apply worker's job): maps it to a command, carries the command
 * out through the ledger's RPCs, and records the outcome fenced by the job's lease. Every command
 * is safe to carry out again after a crash between the ledger's commit and this record: a
 * payment's external id makes its Track a replay, a refund goes to a cumulative total, a signup
 * is recorded once per customer. A service that cannot be reached leaves the event waiting and
 * retries with backoff; a refusal by the ledger is a failure with its message.
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

function afterError(deps: ApplyDeps, row: EventJob, error: unknown): Decision {
  const connect = error instanceof ConnectError ? error : undefined;
  const refused =
    connect !== undefined &&
    [Code.InvalidArgument, Code.FailedPrecondition, Code.OutOfRange, Code.NotFound, Code.AlreadyExists].includes(
      connect.code,
    );
  if (refused) return done("failed", `The ledger refused it: ${connect.rawMessage}`);
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

const messageOf = (error: unknown) =>
  error instanceof ConnectError ? error.rawMessage : error instanceof Error ? error.message : String(error);

async function sameCurrency(deps: ApplyDeps, productId: string, currency: string): Promise<string | undefined> {
  const expected = await deps.programs.currencyOf(productId);
  if (expected.toLowerCase() === currency.toLowerCase()) return undefined;
  return `The amount is in ${currency.toUpperCase()}, the program's currency is ${expected.toUpperCase()}: nothing recorded`;
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
  const { productId } = row;
  const testMode = !row.livemode;
  switch (command.kind) {
    case "ignore":
      return done("ignored", command.detail);

    case "signup": {
      if (command.customerId) {
        const recorded = await signupOfCustomer(deps.sql, productId, command.customerId);
        if (recorded) {
          return done("ignored", `The referral of customer ${command.customerId} is recorded already (${recorded})`, {
            trackingEventId: recorded,
          });
        }
      }
      const tracked = await deps.ledger.track({ productId, testMode, type: "signup", ...command });
      const customerId = command.customerId;
      return {
        record: {
          outcome: "applied",
          detail: tracked.partnershipId
            ? `Signup recorded, attributed to partnership ${tracked.partnershipId}`
            : "Signup recorded; the referral matched no affiliate",
          trackingEventId: tracked.trackingEventId,
          nextAttemptAt: null,
        },
        effects: customerId
          ? (tx) => recordCustomerSignup(tx, { productId, customerId, signupEventId: tracked.trackingEventId })
          : undefined,
      };
    }

    case "payment": {
      const mismatch = await sameCurrency(deps, productId, command.currency);
      if (mismatch) return done("failed", mismatch);
      const tracked = await deps.ledger.track({ productId, testMode, type: "payment", ...command });
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
          await lockPaymentIds(tx, productId, paymentIds);
          await recordPaymentAliases(tx, productId, command.externalId, paymentIds);
          await wakeWaitersOf(tx, productId, paymentIds, deps.clock());
        },
      };
    }

    case "refund": {
      if (testMode) return done("ignored", "A test-mode payment is sandbox data: nothing to refund");
      const mismatch = await sameCurrency(deps, productId, command.currency);
      if (mismatch) return done("failed", mismatch);
      const { refundedTotalCents } = command;
      for (const externalId of await resolvePaymentIds(deps.sql, productId, command.paymentIds)) {
        const outcome = await deps.ledger.refundToTotal({
          productId,
          externalId,
          refundedTotalCents,
          reason: "refunded in Stripe",
        });
        if (outcome.kind === "payment_not_found") continue;
        if (outcome.kind === "no_commission") {
          return done("ignored", `Payment ${externalId} earned no commission: nothing to refund`);
        }
        const what = `Payment ${externalId} refunded to ${refundedTotalCents} cents in total`;
        return done(
          "applied",
          outcome.appliedCents > 0 ? `${what} (${outcome.appliedCents} cents now)` : `${what}; it was already`,
          { commissionIds: outcome.commissionId ? [outcome.commissionId] : [] },
        );
      }
      return waitForPayment(deps, row, command.paymentIds);
    }

    case "hold": {
      if (testMode) return done("ignored", "A test-mode payment is sandbox data: nothing to hold");
      for (const externalId of await resolvePaymentIds(deps.sql, productId, command.paymentIds)) {
        const outcome = await deps.ledger.holdForDispute({ productId, externalId, disputeId: command.disputeId });
        if (outcome.kind === "payment_not_found") continue;
        // As for a refund: a payment that earned nothing has nothing to hold.
        const outcomeName = outcome.commissions.length === 0 && !outcome.replayed ? "ignored" : "applied";
        return done(outcomeName, holdDetail(command.disputeId, externalId, outcome), {
          commissionIds: outcome.commissions.map((c) => c.id),
        });
      }
      return waitForPayment(deps, row, command.paymentIds);
    }

    case "dispute_lost":
    case "release": {
      if (testMode) return done("ignored", "A test-mode payment is sandbox data: no dispute to close");
      const lost = command.kind === "dispute_lost";
      for (const externalId of await resolvePaymentIds(deps.sql, productId, command.paymentIds)) {
        const outcome = await deps.ledger.closeDispute({
          productId,
          externalId,
          disputeId: command.disputeId,
          lost,
          reason: "dispute lost",
        });
        if (outcome.kind === "payment_not_found") continue;
        const outcomeName = outcome.commissionIds.length === 0 && !outcome.replayed ? "ignored" : "applied";
        const closedAs = command.kind === "release" ? command.closedAs : "lost";
        return done(outcomeName, closeDetail(command.disputeId, externalId, closedAs, outcome), {
          commissionIds: outcome.commissionIds,
        });
      }
      return waitForPayment(deps, row, command.paymentIds);
    }
  }
}

function holdDetail(disputeId: string, externalId: string, outcome: Extract<DisputeHoldOutcome, { kind: "held" }>) {
  if (outcome.replayed) return `Dispute ${disputeId} of payment ${externalId} was recorded already: nothing changed`;
  if (outcome.commissions.length === 0) {
    return `Dispute ${disputeId} opened; payment ${externalId} earned no commission: nothing to hold`;
  }
  const held = outcome.commissions.filter((c) => c.held).map((c) => c.id);
  const inPayouts = outcome.commissions.filter((c) => !c.held && c.payoutId).map((c) => `${c.id} (${c.payoutId})`);
  return [
    `Dispute ${disputeId} opened on payment ${externalId}`,
    held.length > 0 ? `: commissions ${held.join(", ")} held until it closes` : ": no commission to hold",
    inPayouts.length > 0 ? `; already in a payout, a lost dispute claws back ${inPayouts.join(", ")}` : "",
  ].join("");
}

function closeDetail(
  disputeId: string,
  externalId: string,
  closedAs: "won" | "warning_closed" | "lost",
  outcome: Extract<DisputeCloseOutcome, { kind: "closed" }>,
) {
  const lost = closedAs === "lost";
  if (outcome.replayed) return `Dispute ${disputeId} of payment ${externalId} was closed already: nothing changed`;
  if (outcome.commissionIds.length === 0) {
    return `Dispute ${disputeId} closed; payment ${externalId} earned no commission: nothing to ${lost ? "refund" : "lift"}`;
  }
  // An inquiry closed without becoming a chargeback is not a dispute won: the detail says which.
  if (closedAs === "warning_closed") {
    return `Dispute ${disputeId} closed without a chargeback (warning_closed): the hold on payment ${externalId}'s commissions is lifted`;
  }
  if (!lost) return `Dispute ${disputeId} won: the hold on payment ${externalId}'s commissions is lifted`;
  return outcome.refundedCents > 0
    ? `Dispute ${disputeId} lost: payment ${externalId} refunded in full (${outcome.refundedCents} cents now)`
    : `Dispute ${disputeId} lost: payment ${externalId} was refunded in full already`;
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
