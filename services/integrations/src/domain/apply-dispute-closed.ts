import type { EventJob } from "../store/events.js";
import { type ApplyDeps, type Decision, done } from "./applying.js";
import { firstKnownPayment } from "./first-known-payment.js";
import type { DisputeCloseOutcome } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/**
 * A dispute closed: won (or an inquiry closed without a chargeback) lifts the hold on the
 * payment's commissions; lost refunds the payment in full ("dispute lost": voided, or clawed
 * back when paid). Idempotent in the ledger by the dispute id, whatever order the opening and
 * closing come in. A payment that earned nothing has nothing to lift or refund: ignored.
 */
export async function applyDisputeClosed(
  deps: ApplyDeps,
  row: EventJob,
  command: Extract<ProviderCommand, { kind: "dispute_lost" | "release" }>,
): Promise<Decision> {
  if (!row.livemode) return done("ignored", "A test-mode payment is sandbox data: no dispute to close");
  const { disputeId } = command;
  const closedAs = command.kind === "release" ? command.closedAs : "lost";
  return firstKnownPayment(deps, row, command.paymentIds, async (externalId) => {
    const outcome = await deps.ledger.closeDispute({
      productId: row.productId,
      externalId,
      disputeId,
      lost: closedAs === "lost",
      reason: "dispute lost",
    });
    if (outcome.kind === "payment_not_found") return outcome;
    const outcomeName = outcome.commissionIds.length === 0 && !outcome.replayed ? "ignored" : "applied";
    return done(outcomeName, closeDetail(disputeId, externalId, closedAs, outcome), {
      commissionIds: outcome.commissionIds,
    });
  });
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
