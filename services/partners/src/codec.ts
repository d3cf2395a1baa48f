import {
  KeyMode as KeyModeProto,
  type Partnership as PartnershipProto,
  PartnershipSchema,
  PartnershipStatus as PartnershipStatusProto,
  type Product as ProductProto,
  ProductSchema,
  type Program as ProgramProto,
  ProgramSchema,
  RegistrationOutcome as RegistrationOutcomeProto,
} from "@affiliate/proto/partners";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { KeyMode, Partnership, PartnershipStatus, Product, Program, RegistrationOutcome } from "./domain/types.js";

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
};

export function partnershipToProto(partnership: Partnership): PartnershipProto {
  return create(PartnershipSchema, {
    id: partnership.id,
    productId: partnership.productId,
    status: statusToProto[partnership.status],
    referralCode: partnership.referralCode,
    createdAt: timestampFromDate(partnership.createdAt),
    affiliate: partnership.affiliate,
    sponsorPartnershipId: partnership.sponsorPartnershipId ?? "",
  });
}

export function programToProto(program: Program): ProgramProto {
  return create(ProgramSchema, { ...program, payoutMinimumCents: BigInt(program.payoutMinimumCents) });
}

export function productToProto(product: Product): ProductProto {
  return create(ProductSchema, { ...product, createdAt: timestampFromDate(product.createdAt) });
}
