/** The partners service's own vocabulary; the RPC edge maps it to and from proto. */

export const partnershipStatuses = ["active", "pending", "rejected", "removed"] as const;
export type PartnershipStatus = (typeof partnershipStatuses)[number];

export type KeyMode = "live" | "test";

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
}

/** The writable program settings; absent fields stay unchanged. */
export type ProgramChanges = Partial<
  Pick<
    Program,
    "commissionRateBps" | "tier2RateBps" | "holdDays" | "payoutMinimumCents" | "attributionWindowDays" | "autoApprove"
  >
>;

export interface Registration {
  email: string;
  name?: string | undefined;
  referralCode?: string | undefined;
  sponsorReferralCode?: string | undefined;
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
}
