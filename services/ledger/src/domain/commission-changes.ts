import type { PartnershipDelta } from "../store/rollups.js";
import type { RollupChanges } from "./rollup-changes.js";
import type { Commission, CommissionStatus } from "./types.js";

interface CommissionState {
  status: CommissionStatus;
  amountCents: number;
}

/** How much of a commission the per-partnership rollup counts in each bucket. */
function buckets(state: CommissionState | null): Required<Omit<PartnershipDelta, "clicks" | "conversions">> {
  const zero = {
    pendingCount: 0,
    pendingAmountCents: 0,
    approvedCount: 0,
    approvedAmountCents: 0,
    paidCount: 0,
    paidAmountCents: 0,
  };
  if (!state) return zero;
  switch (state.status) {
    case "pending":
      return { ...zero, pendingCount: 1, pendingAmountCents: state.amountCents };
    case "approved":
      return { ...zero, approvedCount: 1, approvedAmountCents: state.amountCents };
    case "paid":
      return { ...zero, paidCount: 1, paidAmountCents: state.amountCents };
    default:
      return zero;
  }
}

/** What the day and hour rollups count as commissions: current amounts, rejected excluded (contract 10). */
const countedAmount = (state: CommissionState | null) => (state && state.status !== "rejected" ? state.amountCents : 0);

/**
 * Keeps the rollups equal to the commissions: every creation or change of a commission goes
 * through here, with its state before (null when new) and after; the transaction flushes
 * `changes` before it commits.
 */
export function recordCommissionChange(
  changes: RollupChanges,
  commission: Pick<Commission, "productId" | "partnershipId" | "paymentOccurredAt">,
  before: CommissionState | null,
  after: CommissionState,
): void {
  const [was, is] = [buckets(before), buckets(after)];
  const delta = Object.fromEntries(
    Object.keys(is).map((key) => [key, is[key as keyof typeof is] - was[key as keyof typeof was]]),
  ) as PartnershipDelta;
  changes.addPartnership(commission.productId, commission.partnershipId, delta);
  changes.addActivity(
    commission.productId,
    commission.paymentOccurredAt,
    { commissionsCents: countedAmount(after) - countedAmount(before) },
    commission.partnershipId,
  );
}
