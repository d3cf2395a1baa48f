import type { Program } from "@affiliate/proto/partners";
import type { PublicProgram } from "../schemas/program.js";

export function toPublicProgram(program: Program): PublicProgram {
  return {
    product_id: program.productId,
    name: program.name,
    commission_rate_bps: program.commissionRateBps,
    tier2_rate_bps: program.tier2RateBps,
    hold_days: program.holdDays,
    payout_minimum_cents: Number(program.payoutMinimumCents),
    attribution_window_days: program.attributionWindowDays,
    auto_approve: program.autoApprove,
    currency: program.currency,
  };
}
