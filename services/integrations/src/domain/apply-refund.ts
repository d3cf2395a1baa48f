import type { EventJob } from "../store/events.js";
import { type ApplyDeps, currencyMismatch, type Decision, done } from "./applying.js";
import { firstKnownPayment } from "./first-known-payment.js";
import type { ProviderCommand } from "./types.js";

/**
 * A payment's refunds add up to a new total: the ledger refunds the difference (nothing when the
 * total is reached already, so redeliveries and reports out of order change nothing). A payment
 * that earned no commission has nothing to refund: ignored, saying so.
 */
export async function applyRefund(
  deps: ApplyDeps,
  row: EventJob,
  command: Extract<ProviderCommand, { kind: "refund" }>,
): Promise<Decision> {
  if (!row.livemode) return done("ignored", "A test-mode payment is sandbox data: nothing to refund");
  const mismatch = await currencyMismatch(deps, row.productId, command.currency);
  if (mismatch) return done("failed", mismatch);
  const { refundedTotalCents } = command;
  return firstKnownPayment(deps, row, command.paymentIds, async (externalId) => {
    const outcome = await deps.ledger.refundToTotal({
      productId: row.productId,
      externalId,
      refundedTotalCents,
      reason: "refunded in Stripe",
    });
    if (outcome.kind === "payment_not_found") return outcome;
    if (outcome.kind === "no_commission") {
      return done("ignored", `Payment ${externalId} earned no commission: nothing to refund`);
    }
    const what = `Payment ${externalId} refunded to ${refundedTotalCents} cents in total`;
    return done(
      "applied",
      outcome.appliedCents > 0 ? `${what} (${outcome.appliedCents} cents now)` : `${what}; it was already`,
      { commissionIds: outcome.commissionId ? [outcome.commissionId] : [] },
    );
  });
}
