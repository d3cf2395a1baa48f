import type { EventJob } from "../store/events.js";
import { type ApplyDeps, type Decision, done } from "./applying.js";
import { firstKnownPayment } from "./first-known-payment.js";
import type { DisputeHoldOutcome } from "./ports.js";
import type { ProviderCommand } from "./types.js";

/**
 * A dispute opened on a payment: its commissions are held until the dispute closes (neither
 * approved nor paid out); idempotent in the ledger by the dispute id. A payment that earned
 * nothing has nothing to hold: ignored, saying so.
 */
export async function applyDisputeOpened(
  deps: ApplyDeps,
  row: EventJob,
  command: Extract<ProviderCommand, { kind: "hold" }>,
): Promise<Decision> {
  if (!row.livemode) return done("ignored", "A test-mode payment is sandbox data: nothing to hold");
  const { disputeId } = command;
  return firstKnownPayment(deps, row, command.paymentIds, async (externalId) => {
    const outcome = await deps.ledger.holdForDispute({ productId: row.productId, externalId, disputeId });
    if (outcome.kind === "payment_not_found") return outcome;
    const outcomeName = outcome.commissions.length === 0 && !outcome.replayed ? "ignored" : "applied";
    return done(outcomeName, holdDetail(disputeId, externalId, outcome), {
      commissionIds: outcome.commissions.map((c) => c.id),
    });
  });
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
