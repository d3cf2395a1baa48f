import { asRead } from "@affiliate/platform";
import type { LedgerService } from "@affiliate/proto/ledger";
import { type PartnersAdminService, PartnershipStatus, type PartnersService } from "@affiliate/proto/partners";
import type { Client } from "@connectrpc/connect";
import type { Ledger, Partners } from "../domain/ports.js";

/**
 * The ledger's payout RPCs in the domain's words. Claim and release are idempotent per payout
 * id, but an unknown outcome of one is still reported as such: the caller decides.
 */
export function ledgerOver(client: Client<typeof LedgerService>): Ledger {
  return {
    async listPayableBalances(productId) {
      const { balances } = await asRead(client.listPayableBalances({ productId }));
      return balances.map((b) => ({
        partnershipId: b.partnershipId,
        amountCents: b.amountCents,
        commissionCount: Number(b.commissionCount),
      }));
    },
    async claimCommissions(productId, claims) {
      const { commissions } = await client.claimCommissions({ productId, claims });
      return commissions.map((c) => ({
        commissionId: c.commissionId,
        payoutId: c.payoutId,
        amountCents: Number(c.amountCents),
      }));
    },
    async releaseCommissions(productId, payoutIds) {
      await client.releaseCommissions({ productId, payoutIds });
    },
  };
}

/** BatchGetPartnerships takes at most this many ids per call. */
const batchSize = 100;

/** Partners' program and partnership reads in the domain's words (reads: see asRead). */
export function partnersOver(
  client: Client<typeof PartnersService>,
  admin: Client<typeof PartnersAdminService>,
): Partners {
  return {
    async payoutMinimumCents(productId) {
      const { program } = await asRead(client.getProgram({ productId }));
      if (!program) throw new Error(`partners returned no program for product ${productId}`);
      return program.payoutMinimumCents;
    },
    async activePartnerships(productId, partnershipIds) {
      const active = new Set<string>();
      for (let start = 0; start < partnershipIds.length; start += batchSize) {
        const { partnerships } = await asRead(
          client.batchGetPartnerships({ productId, partnershipIds: partnershipIds.slice(start, start + batchSize) }),
        );
        for (const p of partnerships) if (p.status === PartnershipStatus.ACTIVE) active.add(p.id);
      }
      return active;
    },
    async listProductIds() {
      const { products } = await asRead(admin.listProducts({}));
      return products.map((p) => p.id);
    },
  };
}
