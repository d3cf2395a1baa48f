import { DomainError, type Queryable } from "@affiliate/platform";
import { findAttribution } from "../store/partnerships.js";
import { getProgramOrThrow } from "../store/programs.js";
import type { CommissionOverride, PartnershipStatus, Program } from "./types.js";

export interface Attribution {
  partnershipId: string;
  referralCode: string;
  status: PartnershipStatus;
  /** Set only when the sponsor is active: only an active sponsor earns a level-2 commission. */
  activeSponsorPartnershipId: string | null;
  program: Program;
  /** The partnership's own commission terms over the program's; null when none. */
  commissionOverride: CommissionOverride | null;
  /** The affiliate's email, for the self-referral check; null once the profile was scrubbed. */
  affiliateEmail: string | null;
}

/** What the ledger needs to credit an event to a partnership (architecture: payment to commission). */
export async function resolveAttribution(
  sql: Queryable,
  productId: string,
  target: { referralCode: string } | { partnershipId: string },
): Promise<Attribution> {
  const [row, program] = await Promise.all([
    findAttribution(sql, productId, target),
    getProgramOrThrow(sql, productId),
  ]);
  if (!row) {
    throw new DomainError(
      "not_found",
      "referralCode" in target ? "Unknown referral code" : `Affiliate ${target.partnershipId} not found`,
    );
  }
  return {
    partnershipId: row.id,
    referralCode: row.referralCode,
    status: row.status,
    activeSponsorPartnershipId: row.sponsorStatus === "active" ? row.sponsorPartnershipId : null,
    program,
    commissionOverride: row.commissionOverride,
    affiliateEmail: row.affiliateEmail,
  };
}
