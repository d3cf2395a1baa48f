import { referralCodePattern } from "@affiliate/contract-rules";
import { DomainError, type Queryable } from "@affiliate/platform";
import { activePartnershipsByCode } from "../store/products.js";
import type { ReferralLink } from "./types.js";

/**
 * Where a referral link (/r/CODE) leads (contract section 17). The link carries no product, so
 * the code is looked up among every product's active partnerships; a code two products share
 * names neither (NOT_FOUND, like an unknown or dead code), so a link never credits the wrong
 * merchant.
 */
export async function resolveReferralLink(sql: Queryable, referralCode: string): Promise<ReferralLink> {
  if (!referralCodePattern.test(referralCode)) throw new DomainError("not_found", "Unknown referral code");
  const found = await activePartnershipsByCode(sql, referralCode);
  if (found.length !== 1 || !found[0]) throw new DomainError("not_found", "Unknown referral code");
  return found[0];
}
