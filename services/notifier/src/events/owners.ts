/**
 * The owners of what a payload or an email carries, asked when an event is recorded: events
 * carry ids, never a customer's email or a refund's free-text reason. Implemented over Connect
 * by ownersOver(); tests back it with in-memory routers of the real services' types.
 */
import type { Commission, LedgerService } from "@affiliate/proto/ledger";
import type { Partnership, PartnersService } from "@affiliate/proto/partners";
import type { PartnershipStats } from "@affiliate/rest-shapes/figures";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";

/** What a sign-in email carries: the one-time code, and who it goes to. */
export interface LoginCode {
  code: string;
  expiresAt: Date;
  affiliate: { email: string; name: string };
  programName: string;
}

export interface Owners {
  /** The ledger's commission, with the customer's email and the last refund's reason. */
  commission(productId: string, commissionId: string): Promise<Commission>;
  /** Partners' partnership, with the affiliate's profile. */
  partnership(productId: string, partnershipId: string): Promise<Partnership>;
  /** The ledger's all-time figures of a partnership. */
  partnershipStats(productId: string, partnershipId: string): Promise<PartnershipStats>;
  /**
   * A fresh code of a sign-in, from partners (each call replaces the previous code), or
   * undefined when the sign-in can no longer be used (used, expired, or gone).
   */
  loginCode(productId: string, loginId: string): Promise<LoginCode | undefined>;
}

export function ownersOver(ledger: Client<typeof LedgerService>, partners: Client<typeof PartnersService>): Owners {
  return {
    async commission(productId, commissionId) {
      const { commission } = await ledger.getCommission({ productId, commissionId });
      if (!commission) throw new Error(`the ledger returned no commission ${commissionId}`);
      return commission;
    },
    async partnership(productId, partnershipId) {
      const { partnership } = await partners.getPartnership({ productId, partnershipId });
      if (!partnership) throw new Error(`partners returned no partnership ${partnershipId}`);
      return partnership;
    },
    async loginCode(productId, loginId) {
      try {
        const issued = await partners.issueAffiliateLoginCode({ productId, loginId });
        const affiliate = issued.partnership?.affiliate;
        if (!affiliate || !issued.expiresAt) throw new Error(`partners issued login ${loginId} without its affiliate`);
        return {
          code: issued.code,
          expiresAt: timestampDate(issued.expiresAt),
          affiliate: { email: affiliate.email, name: affiliate.name },
          programName: issued.programName,
        };
      } catch (error) {
        const spent = error instanceof ConnectError && [Code.FailedPrecondition, Code.NotFound].includes(error.code);
        if (spent) return undefined;
        throw error;
      }
    },
    async partnershipStats(productId, partnershipId) {
      const { stats } = await ledger.batchGetPartnershipStats({ productId, partnershipIds: [partnershipId] });
      const figures = stats[partnershipId];
      return {
        clicks: Number(figures?.clicks ?? 0),
        conversions: Number(figures?.conversions ?? 0),
        earned_cents: figures?.earnedCents ?? 0n,
      };
    },
  };
}
