import type { FraudSettings } from "@affiliate/contract-rules";

/** The partners service's own vocabulary; the RPC edge maps it to and from proto. */

export const partnershipStatuses = ["active", "pending", "rejected", "removed"] as const;
export type PartnershipStatus = (typeof partnershipStatuses)[number];

export type KeyMode = "live" | "test" | "publishable_live" | "publishable_test";

export interface Product {
  id: string;
  name: string;
  createdAt: Date;
}

export interface Affiliate {
  id: string;
  email: string;
  name: string;
}

export interface Partnership {
  id: string;
  productId: string;
  status: PartnershipStatus;
  referralCode: string;
  createdAt: Date;
  sponsorPartnershipId: string | null;
  affiliate: Affiliate;
  /** The partnership's own commission terms; null when it follows the program's. */
  commissionOverride: CommissionOverride | null;
  /** The merchant's own id for the affiliate, unique within the product; null when none. */
  externalId: string | null;
}

export const commissionTypes = ["percent", "flat"] as const;
export type CommissionType = (typeof commissionTypes)[number];

/**
 * A partnership's commission terms over the program's (contract section 12). A field left out
 * inherits the program's; a limit set to null means no limit for this partnership, whatever the
 * program's.
 */
export interface CommissionOverride {
  commissionType?: CommissionType;
  commissionRateBps?: number;
  commissionFlatCents?: number;
  tier2RateBps?: number;
  maxCommissionMonths?: number | null;
  maxCommissionPayments?: number | null;
}

export interface Program {
  productId: string;
  name: string;
  commissionRateBps: number;
  tier2RateBps: number;
  holdDays: number;
  payoutMinimumCents: number;
  attributionWindowDays: number;
  autoApprove: boolean;
  currency: string;
  commissionType: CommissionType;
  commissionFlatCents: number;
  /** null: payments earn for the customer's lifetime. */
  maxCommissionMonths: number | null;
  /** null: every payment of a customer earns. */
  maxCommissionPayments: number | null;
  /** null: the merchant set no link template. */
  referralUrlTemplate: string | null;
  /** What each fraud signal does (contract section 18). */
  fraud: FraudSettings;
}

/** The writable program settings; absent fields stay unchanged, null clears a nullable one. */
export type ProgramChanges = Partial<
  Pick<
    Program,
    | "commissionRateBps"
    | "tier2RateBps"
    | "holdDays"
    | "payoutMinimumCents"
    | "attributionWindowDays"
    | "autoApprove"
    | "commissionType"
    | "commissionFlatCents"
    | "maxCommissionMonths"
    | "maxCommissionPayments"
    | "referralUrlTemplate"
  >
> & {
  /** The fraud settings given; the others stay as they are. */
  fraud?: Partial<FraudSettings> | undefined;
};

export interface Registration {
  email: string;
  name?: string | undefined;
  referralCode?: string | undefined;
  sponsorReferralCode?: string | undefined;
  externalId?: string | undefined;
}

export type RegistrationOutcome = "created" | "joined" | "reactivated";

export interface RegistrationResult {
  outcome: RegistrationOutcome;
  partnership: Partnership;
}

/** Keys as issued: shown once, stored only as hashes. */
export interface IssuedKeys {
  secretKey: string;
  testSecretKey: string;
  publishableKey: string;
  testPublishableKey: string;
}

/** A product's publishable keys: public by design, so they can be read again. */
export interface PublishableKeys {
  publishableKey: string;
  testPublishableKey: string;
  createdAt: Date;
}

/** Where a referral link leads: its active partnership, product and the program's link template. */
export interface ReferralLink {
  productId: string;
  partnershipId: string;
  referralCode: string;
  referralUrlTemplate: string | null;
}
