import {
  CommissionType,
  FraudAction,
  type FraudSettings,
  type FraudSettingsSchema,
  type Program,
} from "@affiliate/proto/partners";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PublicProgram, UpdateProgramBody } from "../schemas/program.js";
import { ContractViolation } from "./common.js";

const actionNames: Record<FraudAction, "flag" | "reject" | "off" | undefined> = {
  [FraudAction.UNSPECIFIED]: undefined,
  [FraudAction.FLAG]: "flag",
  [FraudAction.REJECT]: "reject",
  [FraudAction.OFF]: "off",
};

function actionName(action: FraudAction | undefined, field: string) {
  const name = action === undefined ? undefined : actionNames[action];
  if (!name) throw new ContractViolation(`program.fraud.${field} has no public name`);
  return name;
}

/**
 * The fraud settings as the program shows them. A program without them comes from a partners
 * service older than the settings (a rolling deploy), whose programs have the defaults.
 */
export function toPublicFraudSettings(fraud: FraudSettings | undefined): PublicProgram["fraud"] {
  if (!fraud) {
    return {
      self_referral: "flag",
      refund_rate: "flag",
      duplicate_click: "flag",
      bot: "flag",
      refund_rate_threshold_bps: null,
    };
  }
  return {
    self_referral: actionName(fraud?.selfReferral, "self_referral"),
    refund_rate: actionName(fraud?.refundRate, "refund_rate"),
    duplicate_click: actionName(fraud?.duplicateClick, "duplicate_click") as "flag" | "off",
    bot: actionName(fraud?.bot, "bot") as "flag" | "off",
    // 0 on the wire is none.
    refund_rate_threshold_bps: fraud?.refundRateThresholdBps || null,
  };
}

/** The fraud changes of a PATCH as partners takes them: a field left out stays UNSPECIFIED or unset. */
export function fraudChangesToProto(
  changes: UpdateProgramBody["fraud"],
): MessageInitShape<typeof FraudSettingsSchema> | undefined {
  if (!changes) return undefined;
  const action = (name: "flag" | "reject" | "off" | undefined) =>
    name === undefined
      ? FraudAction.UNSPECIFIED
      : { flag: FraudAction.FLAG, reject: FraudAction.REJECT, off: FraudAction.OFF }[name];
  return {
    selfReferral: action(changes.self_referral),
    refundRate: action(changes.refund_rate),
    duplicateClick: action(changes.duplicate_click),
    bot: action(changes.bot),
    refundRateThresholdBps:
      changes.refund_rate_threshold_bps === undefined ? undefined : (changes.refund_rate_threshold_bps ?? 0),
  };
}

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
    fraud: toPublicFraudSettings(program.fraud),
  };
}
