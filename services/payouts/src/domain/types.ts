/** The payouts service's own vocabulary; the RPC edge maps it to and from proto. */

/** Public statuses (spec 3.2). A rejected payout is deleted, so it has none. */
export type PayoutStatus = "pending" | "approved" | "failed" | "processing" | "completed";

export interface Payout {
  id: string;
  productId: string;
  partnershipId: string;
  status: PayoutStatus;
  /**
   * Net: linked commissions plus linked (negative) adjustments. A sum, so a bigint: exact however
   * many commissions it holds (contract section 11).
   */
  amountCents: bigint;
  /** Sum of the linked adjustments: 0 or negative. */
  adjustmentCents: bigint;
  commissionCount: number;
  createdAt: Date;
  approvedAt: Date | null;
  paidAt: Date | null;
  gatewayTransferId: string | null;
  failureReason: string | null;
}

/** What a merchant does with a payout (spec 4.10, contract 8). */
export type PayoutAction = "approve" | "reject" | "mark_paid" | "mark_failed";
