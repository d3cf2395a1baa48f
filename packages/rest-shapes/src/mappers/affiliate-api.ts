import { type Commission, HoldReason } from "@affiliate/proto/ledger";
import { CommissionType, type Partnership, PartnershipStatus, type Program } from "@affiliate/proto/partners";
import { type Payout, type PayoutLine, PayoutLineKind } from "@affiliate/proto/payouts";
import type {
  PublicAffiliateCommission,
  PublicAffiliateMe,
  PublicAffiliatePayout,
  PublicAffiliateRule,
  PublicPayoutLine,
} from "../schemas/affiliate-api.js";
import { commissionStatusName, toPublicCommissionRule } from "./commissions.js";
import { ContractViolation, isoTime, isoTimeOrNull, required } from "./common.js";
import { payoutStatusName } from "./payouts.js";

/**
 * An email as an affiliate may see its customer's: the first character of the local part, then
 * `***`, then the domain (`jane@example.com` -> `j***@example.com`). Enough to recognise a
 * customer one knows, not enough to contact one.
 */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  if (at <= 0) return "***";
  const first = String.fromCodePoint(email.codePointAt(0) ?? 42);
  return `${first}***${email.slice(at)}`;
}

/** The program's link template with the code in it (`{code}` replaced, URL-encoded), or null. */
export function referralLinkOf(template: string, referralCode: string): string | null {
  return template ? template.replaceAll("{code}", encodeURIComponent(referralCode)) : null;
}

/** The terms the partnership's next payments earn by: its override's fields over the program's. */
export function effectiveRule(program: Program, partnership: Partnership): PublicAffiliateRule {
  const override = partnership.commissionOverride;
  // UNSPECIFIED (0) on the override inherits the program's type.
  const type = override?.commissionType || program.commissionType;
  const flat = type === CommissionType.FLAT;
  // On the wire a limit of 0 is "no limit", an unset override field inherits the program's.
  const limit = (own: number | undefined, inherited: number) => {
    const value = own ?? inherited;
    return value === 0 ? null : value;
  };
  return {
    source: override ? "partnership" : "program",
    commission_type: flat ? "flat" : "percent",
    commission_rate_bps: flat ? null : (override?.commissionRateBps ?? program.commissionRateBps),
    commission_flat_cents: flat ? Number(override?.commissionFlatCents ?? program.commissionFlatCents) : null,
    tier2_rate_bps: override?.tier2RateBps ?? program.tier2RateBps,
    max_commission_months: limit(override?.maxCommissionMonths, program.maxCommissionMonths),
    max_commission_payments: limit(override?.maxCommissionPayments, program.maxCommissionPayments),
  };
}

/** GET /affiliate/v1/me: the partnership as its affiliate sees it, with the program's terms. */
export function toAffiliateMe(partnership: Partnership, program: Program): PublicAffiliateMe {
  if (partnership.status !== PartnershipStatus.ACTIVE) {
    throw new ContractViolation(`partnership ${partnership.id} read with a live token is not active`);
  }
  const affiliate = required(partnership.affiliate, "partnership.affiliate");
  return {
    partnership_id: partnership.id,
    status: "active",
    referral_code: partnership.referralCode,
    referral_link: referralLinkOf(program.referralUrlTemplate, partnership.referralCode),
    joined_at: isoTime(partnership.createdAt, "partnership.created_at", "partners"),
    affiliate: { name: affiliate.name, email: affiliate.email },
    program: {
      name: program.name,
      currency: program.currency,
      hold_days: program.holdDays,
      payout_minimum_cents: Number(program.payoutMinimumCents),
    },
    rule: effectiveRule(program, partnership),
  };
}

/**
 * A commission as its affiliate sees it: the customer masked. The ledger keeps one reason per
 * commission, a rejection's or a refund's: on a commission that is not rejected it can only be
 * a refund's. A commission a fraud signal flagged reads `hold_reason: "review"` ("under review")
 * and nothing more: its flags and their evidence would teach evasion. Other holds read null.
 */
export function toAffiliateCommission(commission: Commission): PublicAffiliateCommission {
  const status = commissionStatusName(commission.status);
  return {
    id: commission.id,
    status,
    level: commission.level,
    amount_cents: Number(commission.amountCents),
    payment_amount_cents: Number(commission.paymentAmountCents),
    hold_until: isoTime(commission.holdUntil, "commission.hold_until", "ledger"),
    hold_reason: commission.holdReason === HoldReason.REVIEW ? "review" : null,
    created_at: isoTime(commission.createdAt, "commission.created_at", "ledger"),
    payout_id: commission.payoutId || null,
    rule: commission.rule ? toPublicCommissionRule(commission.rule) : null,
    refund_reason: status !== "rejected" && commission.reason ? commission.reason : null,
    customer: commission.customerEmail ? maskEmail(commission.customerEmail) : null,
  };
}

/**
 * A payout as its affiliate sees it, line by line: the list and the single read both answer this.
 * `lines` are the payouts service's, read with the payout in one snapshot; `refundReasons` holds
 * the reason the merchant gave for each refund an adjustment claws back, by commission id (the
 * ledger keeps it on the commission). Lines that do not sum exactly to the amount are a broken
 * contract, never an answer.
 */
export function toAffiliatePayout(
  payout: Payout,
  lines: readonly PayoutLine[],
  refundReasons: ReadonlyMap<string, string>,
): PublicAffiliatePayout {
  const total = lines.reduce((sum, line) => sum + line.amountCents, 0n);
  if (total !== payout.amountCents) {
    throw new ContractViolation(`payout ${payout.id}: lines sum to ${total}, amount is ${payout.amountCents}`);
  }
  return {
    id: payout.id,
    status: payoutStatusName(payout.status),
    amount_cents: payout.amountCents,
    adjustment_cents: payout.adjustmentCents,
    commission_count: Number(payout.commissionCount),
    created_at: isoTime(payout.createdAt, "payout.created_at", "payouts"),
    approved_at: isoTimeOrNull(payout.approvedAt),
    paid_at: isoTimeOrNull(payout.paidAt),
    lines: lines.map((line) => toPayoutLine(line, refundReasons)),
  };
}

/** The commissions whose refunds the lines' adjustments claw back: whose reasons the lines name. */
export function clawedBackCommissionIds(lines: readonly PayoutLine[]): string[] {
  return lines.filter((line) => line.kind === PayoutLineKind.ADJUSTMENT).map((line) => line.commissionId);
}

/**
 * A payout line, described for the affiliate. `refundReasons` holds the reason the merchant gave
 * for the refund an adjustment claws back, by commission id, when there was one.
 */
export function toPayoutLine(line: PayoutLine, refundReasons: ReadonlyMap<string, string>): PublicPayoutLine {
  if (line.kind === PayoutLineKind.COMMISSION) {
    return { kind: "commission", id: line.id, amount_cents: line.amountCents, description: `Commission ${line.id}` };
  }
  if (line.kind === PayoutLineKind.ADJUSTMENT) {
    const reason = refundReasons.get(line.commissionId);
    return {
      kind: "adjustment",
      id: line.id,
      amount_cents: line.amountCents,
      description: `Refund of commission ${line.commissionId}${reason ? ` (${reason})` : ""}`,
    };
  }
  throw new ContractViolation(`payout line ${line.id} of kind ${line.kind} has no public name`);
}
