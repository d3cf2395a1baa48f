import type { PayoutDetails, WiseReceiverType } from "@affiliate/contract-rules";
import { DomainError, enumFilter, fraudSettingsFromProto, fraudSettingsToProto } from "@affiliate/platform";
import {
  type CommissionOverride as CommissionOverrideProto,
  CommissionOverrideSchema,
  CommissionType as CommissionTypeProto,
  type FraudSettings as FraudSettingsProto,
  KeyMode as KeyModeProto,
  type Partnership as PartnershipProto,
  PartnershipSchema,
  PartnershipStatus as PartnershipStatusProto,
  type PayoutMethod as PayoutMethodProto,
  PayoutMethodSchema,
  type Product as ProductProto,
  ProductSchema,
  type Program as ProgramProto,
  ProgramSchema,
  RegistrationOutcome as RegistrationOutcomeProto,
  WiseReceiverType as WiseReceiverTypeProto,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type {
  CommissionOverride,
  CommissionType,
  KeyMode,
  Partnership,
  PartnershipStatus,
  Product,
  Program,
  ProgramChanges,
  RegistrationOutcome,
} from "./domain/types.js";

export const statusToProto: Record<PartnershipStatus, PartnershipStatusProto> = {
  active: PartnershipStatusProto.ACTIVE,
  pending: PartnershipStatusProto.PENDING,
  rejected: PartnershipStatusProto.REJECTED,
  removed: PartnershipStatusProto.REMOVED,
};

export const outcomeToProto: Record<RegistrationOutcome, RegistrationOutcomeProto> = {
  created: RegistrationOutcomeProto.CREATED,
  joined: RegistrationOutcomeProto.JOINED,
  reactivated: RegistrationOutcomeProto.REACTIVATED,
};

export const keyModeToProto: Record<KeyMode, KeyModeProto> = {
  live: KeyModeProto.LIVE,
  test: KeyModeProto.TEST,
  publishable_live: KeyModeProto.PUBLISHABLE_LIVE,
  publishable_test: KeyModeProto.PUBLISHABLE_TEST,
};

export const commissionTypeToProto: Record<CommissionType, CommissionTypeProto> = {
  percent: CommissionTypeProto.PERCENT,
  flat: CommissionTypeProto.FLAT,
};

/** A commission type as requested: UNSPECIFIED leaves it, an unknown value is INVALID_ARGUMENT on `field`. */
export const commissionTypeFromProto = (value: CommissionTypeProto, field: string): CommissionType | undefined =>
  enumFilter(commissionTypeToProto, value, field);

/**
 * A limit on the wire: 0 means none (null), as its range starts at 1. Negative values are passed
 * through so the range check names them.
 */
const limitToProto = (limit: number | null) => limit ?? 0;
const limitFromProto = (limit: number | undefined) => (limit === undefined ? undefined : limit === 0 ? null : limit);

/** A cents value from the wire: beyond 2^53 it cannot be exact here, and is out of every range anyway. */
const centsFromProto = (cents: bigint | undefined, field: string): number | undefined => {
  if (cents === undefined) return undefined;
  if (cents > BigInt(Number.MAX_SAFE_INTEGER) || cents < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw DomainError.invalidField(field, "Out of range");
  }
  return Number(cents);
};

export function commissionOverrideToProto(override: CommissionOverride): CommissionOverrideProto {
  return create(CommissionOverrideSchema, {
    commissionType:
      override.commissionType === undefined
        ? CommissionTypeProto.UNSPECIFIED
        : commissionTypeToProto[override.commissionType],
    commissionRateBps: override.commissionRateBps,
    commissionFlatCents: override.commissionFlatCents === undefined ? undefined : BigInt(override.commissionFlatCents),
    tier2RateBps: override.tier2RateBps,
    maxCommissionMonths:
      override.maxCommissionMonths === undefined ? undefined : limitToProto(override.maxCommissionMonths),
    maxCommissionPayments:
      override.maxCommissionPayments === undefined ? undefined : limitToProto(override.maxCommissionPayments),
  });
}

/** The override as requested; fields left unset stay absent (inherited). */
export function commissionOverrideFromProto(override: CommissionOverrideProto): CommissionOverride {
  const decoded: CommissionOverride = {
    commissionType: commissionTypeFromProto(override.commissionType, "commission_override.commission_type"),
    commissionRateBps: override.commissionRateBps,
    commissionFlatCents: centsFromProto(override.commissionFlatCents, "commission_override.commission_flat_cents"),
    tier2RateBps: override.tier2RateBps,
    maxCommissionMonths: limitFromProto(override.maxCommissionMonths),
    maxCommissionPayments: limitFromProto(override.maxCommissionPayments),
  };
  return Object.fromEntries(Object.entries(decoded).filter(([, value]) => value !== undefined)) as CommissionOverride;
}

/** An UpdateProgram request's changes; unset fields stay absent, a 0 limit or empty template clears it. */
export function programChangesFromProto(req: {
  commissionRateBps?: number | undefined;
  tier2RateBps?: number | undefined;
  holdDays?: number | undefined;
  payoutMinimumCents?: bigint | undefined;
  attributionWindowDays?: number | undefined;
  autoApprove?: boolean | undefined;
  commissionType: CommissionTypeProto;
  commissionFlatCents?: bigint | undefined;
  maxCommissionMonths?: number | undefined;
  maxCommissionPayments?: number | undefined;
  referralUrlTemplate?: string | undefined;
  fraud?: FraudSettingsProto | undefined;
}): ProgramChanges {
  const fraud = fraudSettingsFromProto(req.fraud);
  return {
    fraud: Object.keys(fraud).length > 0 ? fraud : undefined,
    commissionRateBps: req.commissionRateBps,
    tier2RateBps: req.tier2RateBps,
    holdDays: req.holdDays,
    payoutMinimumCents: centsFromProto(req.payoutMinimumCents, "payout_minimum_cents"),
    attributionWindowDays: req.attributionWindowDays,
    autoApprove: req.autoApprove,
    commissionType: commissionTypeFromProto(req.commissionType, "commission_type"),
    commissionFlatCents: centsFromProto(req.commissionFlatCents, "commission_flat_cents"),
    maxCommissionMonths: limitFromProto(req.maxCommissionMonths),
    maxCommissionPayments: limitFromProto(req.maxCommissionPayments),
    referralUrlTemplate:
      req.referralUrlTemplate === undefined
        ? undefined
        : req.referralUrlTemplate === ""
          ? null
          : req.referralUrlTemplate,
  };
}

export function partnershipToProto(partnership: Partnership): PartnershipProto {
  return create(PartnershipSchema, {
    id: partnership.id,
    productId: partnership.productId,
    status: statusToProto[partnership.status],
    referralCode: partnership.referralCode,
    createdAt: timestampFromDate(partnership.createdAt),
    affiliate: partnership.affiliate,
    sponsorPartnershipId: partnership.sponsorPartnershipId ?? "",
    commissionOverride: partnership.commissionOverride
      ? commissionOverrideToProto(partnership.commissionOverride)
      : undefined,
    externalId: partnership.externalId ?? "",
  });
}

export function programToProto(program: Program): ProgramProto {
  return create(ProgramSchema, {
    ...program,
    payoutMinimumCents: BigInt(program.payoutMinimumCents),
    commissionType: commissionTypeToProto[program.commissionType],
    commissionFlatCents: BigInt(program.commissionFlatCents),
    maxCommissionMonths: limitToProto(program.maxCommissionMonths),
    maxCommissionPayments: limitToProto(program.maxCommissionPayments),
    referralUrlTemplate: program.referralUrlTemplate ?? "",
    fraud: fraudSettingsToProto(program.fraud),
  });
}

export function productToProto(product: Product): ProductProto {
  return create(ProductSchema, { ...product, createdAt: timestampFromDate(product.createdAt) });
}

const receiverTypeToProto: Record<WiseReceiverType, WiseReceiverTypeProto> = {
  person: WiseReceiverTypeProto.PERSON,
  institution: WiseReceiverTypeProto.INSTITUTION,
};

/** The details a SetPayoutMethod request carries (not yet checked); INVALID_ARGUMENT without any. */
export function payoutDetailsFromProto(method: PayoutMethodProto | undefined): PayoutDetails {
  const details = method?.details;
  if (details?.case === "paypal") return { type: "paypal", email: details.value.email };
  if (details?.case === "wise") {
    const wise = details.value;
    return {
      type: "wise",
      accountHolderName: wise.accountHolderName,
      email: wise.email || undefined,
      iban: wise.iban || undefined,
      currency: wise.currency || undefined,
      receiverType: wise.receiverType === WiseReceiverTypeProto.INSTITUTION ? "institution" : "person",
    };
  }
  throw DomainError.invalidField("type", "Must be paypal or wise");
}

export function payoutMethodToProto(method: {
  partnershipId: string;
  details: PayoutDetails;
  updatedAt: Date;
}): PayoutMethodProto {
  const { details } = method;
  return create(PayoutMethodSchema, {
    partnershipId: method.partnershipId,
    updatedAt: timestampFromDate(method.updatedAt),
    details:
      details.type === "paypal"
        ? { case: "paypal", value: { email: details.email } }
        : {
            case: "wise",
            value: {
              accountHolderName: details.accountHolderName,
              email: details.email ?? "",
              iban: details.iban ?? "",
              currency: details.currency ?? "",
              receiverType: receiverTypeToProto[details.receiverType],
            },
          },
  });
}
