import type { ClaimedJob, Logger, Sql, TransactionSql } from "@affiliate/platform";
import { Code, ConnectError } from "@connectrpc/connect";
import { countStripeEvent } from "../metrics.js";
import {
  anyPaymentRecorded,
  customerSeen,
  markCustomerSeen,
  partnershipOfPromotionCodes,
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
  paymentsAwaitingCustomer,
  recordAttempt,
  wakeCustomerWaiters,
  wakeWaitersOf,
} from "../store/events.js";
import type { DisputeCloseOutcome, DisputeHoldOutcome, Ledger, Programs, ProviderCustomers } from "./ports.js";
import type { ProviderCommand, Referral } from "./types.js";

/** How long a refund or dispute waits for its payment before it fails (contract section 13). */
export const paymentWaitMs = 72 * 60 * 60 * 1000;
/** A waiting event is also looked at this often (a payment recorded wakes it at once). */
const waitingRecheckMs = 10 * 60 * 1000;
/** Transient failures (a service unavailable) are retried this many times before the event fails. */
export const maxTransientAttempts = 12;
/**
 * How long a payment whose customer nothing attributes yet waits for the customer's own event
 * (contract section 17): Stripe does not promise order, and a customer.created with its referral
 * may arrive after the customer's first invoice.
 */
export const customerWaitMs = 10 * 60 * 1000;

export interface ApplyDeps {
  sql: Sql;
  ledger: Ledger;
  programs: Programs;
  /** The provider adapter's reading of a stored payload. */
  commandOf(payload: unknown): ProviderCommand;
  /** The provider's customers through the connection's API key; without it payments wait instead. */
  customers?: ProviderCustomers | undefined;
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
    case "ignore": {
      const customerId = command.customerId;
      return {
        ...done("ignored", command.detail),
        effects: customerId ? customerArrived(deps, productId, customerId) : undefined,
      };
    }

    case "signup": {
      const customerId = command.customerId;
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
        testMode,
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
        effects: customerId
          ? async (tx) => {
              await recordCustomerSignup(tx, { productId, customerId, signupEventId: tracked.trackingEventId });
              await arrived?.(tx);
            }
          : undefined,
      };
    }

    case "payment": {
      const mismatch = await sameCurrency(deps, productId, command.currency);
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
            // Read from Stripe at once: the customer's referral is recorded as its event would have.
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

/**
 * Who referred the customer, first match (contract section 17): the merchant's metadata; else a
 * promotion code mapped to a partnership (a code beats a cookie); else the session's
 * client_reference_id.
 */
async function referralOf(
  deps: ApplyDeps,
  productId: string,
  command: { referral?: Referral | undefined; promotionCodes: string[] },
): Promise<Referral | undefined> {
  const own = command.referral;
  if (own && "referralCode" in own && own.source === "metadata") return own;
  const mapped = await partnershipOfPromotionCodes(deps.sql, productId, command.promotionCodes);
  if (mapped) return { referralCode: mapped.referralCode, source: "coupon" };
  return own;
}

const earliest = (a: Date, b: Date | undefined) => (b !== undefined && b < a ? b : a);

/** The customer's own event was applied: its waiting payments go now, and later ones never wait. */
function customerArrived(deps: ApplyDeps, productId: string, customerId: string) {
  return async (tx: TransactionSql) => {
    await markCustomerSeen(tx, productId, customerId);
    await wakeCustomerWaiters(tx, productId, customerId, deps.clock());
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

/**
 * A payment before its customer's event, read from the provider at once: the customer's referral
 * is recorded as a signup (no later than the payment), as its event would have recorded it.
 */
async function applyFetchedCustomer(
  deps: ApplyDeps,
  row: EventJob,
  customerId: string,
  fetched: { email?: string | undefined; referralCode?: string | undefined; createdAt?: Date | undefined },
  paymentAt: Date,
): Promise<(tx: TransactionSql) => Promise<void>> {
  const { productId } = row;
  const arrived = customerArrived(deps, productId, customerId);
  if (!fetched.referralCode || (await signupOfCustomer(deps.sql, productId, customerId))) return arrived;
  const tracked = await deps.ledger.track({
    productId,
    testMode: !row.livemode,
    type: "signup",
    referral: { referralCode: fetched.referralCode, source: "metadata" },
    customerId,
    email: fetched.email,
    occurredAt: earliest(paymentAt, fetched.createdAt),
  });
  return async (tx) => {
    await recordCustomerSignup(tx, { productId, customerId, signupEventId: tracked.trackingEventId });
    await arrived(tx);
  };
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
