import type { FraudAction, FraudSettings } from "@affiliate/contract-rules";
import {
  FraudAction as FraudActionProto,
  type FraudSettings as FraudSettingsProto,
  FraudSettingsSchema,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { enumFilter } from "./proto-enum.js";

/**
 * The fraud settings on the wire (partners' Program and UpdateProgramRequest), one codec for the
 * partners service that stores them, the ledger that applies them and the gateway that shows
 * them. A threshold of 0 on the wire is none (null), as its range starts at 1.
 */
export const fraudActionToProto: Record<FraudAction, FraudActionProto> = {
  flag: FraudActionProto.FLAG,
  reject: FraudActionProto.REJECT,
  off: FraudActionProto.OFF,
};

export function fraudSettingsToProto(settings: FraudSettings): FraudSettingsProto {
  return create(FraudSettingsSchema, {
    selfReferral: fraudActionToProto[settings.selfReferral],
    duplicateClick: fraudActionToProto[settings.duplicateClick],
    bot: fraudActionToProto[settings.bot],
    refundRate: fraudActionToProto[settings.refundRate],
    refundRateThresholdBps: settings.refundRateThresholdBps ?? 0,
  });
}

/**
 * The settings a message sets: an UNSPECIFIED action or an unset threshold is absent (an
 * update leaves it), a threshold of 0 is null. An unknown action is INVALID_ARGUMENT naming
 * `fraud.<signal>`.
 */
export function fraudSettingsFromProto(message: FraudSettingsProto | undefined): Partial<FraudSettings> {
  if (!message) return {};
  const action = (value: FraudActionProto, field: string) => enumFilter(fraudActionToProto, value, `fraud.${field}`);
  const decoded: Partial<FraudSettings> = {
    selfReferral: action(message.selfReferral, "self_referral"),
    duplicateClick: action(message.duplicateClick, "duplicate_click"),
    bot: action(message.bot, "bot"),
    refundRate: action(message.refundRate, "refund_rate"),
    refundRateThresholdBps:
      message.refundRateThresholdBps === undefined
        ? undefined
        : message.refundRateThresholdBps === 0
          ? null
          : message.refundRateThresholdBps,
  };
  return Object.fromEntries(Object.entries(decoded).filter(([, value]) => value !== undefined));
}
