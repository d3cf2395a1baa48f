/**
 * What the ledger's use cases need from other services, in the domain's words. The adapter in
 * rpc/partners-directory.ts implements it over Connect; the follower in events/ keeps its cache
 * honest.
 */
import type { Attribution } from "./types.js";

/** Where the ledger learns who an event is credited to. */
export interface PartnersDirectory {
  /** The partnership of a referral code; undefined when no partnership has it. */
  byReferralCode(productId: string, referralCode: string): Promise<Attribution | undefined>;
  byPartnershipId(productId: string, partnershipId: string): Promise<Attribution | undefined>;
}
