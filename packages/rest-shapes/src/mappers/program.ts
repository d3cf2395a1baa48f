import { CommissionType, type Program } from "@affiliate/proto/partners";
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
    commission_type: program.commissionType === CommissionType.FLAT ? "flat" : "percent",
    commission_flat_cents: Number(program.commissionFlatCents),
    // 0 on the wire is no limit.
    max_commission_months: program.maxCommissionMonths || null,
    max_commission_payments: program.maxCommissionPayments || null,
    referral_url_template: program.referralUrlTemplate || null,
  };
}
