import type { PayoutDetails } from "@affiliate/contract-rules";
import { asRead, inBatches } from "@affiliate/platform";
import type { LedgerService } from "@affiliate/proto/ledger";
import {
  type PartnersAdminService,
  PartnershipStatus,
  type PartnersService,
  type PayoutMethod,
  WiseReceiverType,
} from "@affiliate/proto/partners";
import type { Client } from "@connectrpc/connect";
import type { Ledger, Partners } from "../domain/ports.js";

/**
 * The ledger's payout RPCs in the domain's words. Claim and unlink are idempotent per payout
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
    async unlinkCommissions(productId, payoutIds) {
      await client.releaseCommissions({ productId, payoutIds });
    },
  };
}

/** BatchGetPartnerships takes at most this many ids per call. */
const batchSize = 100;
/** RevealPayoutMethods takes at most this many ids per call. */
const revealBatchSize = 100;

/** A revealed method in the domain's words; undefined for a method this code does not know. */
function payoutDetailsOf(method: PayoutMethod): PayoutDetails | undefined {
  const { details } = method;
  if (details.case === "paypal") return { type: "paypal", email: details.value.email };
  if (details.case !== "wise") return undefined;
  const wise = details.value;
  return {
    type: "wise",
    accountHolderName: wise.accountHolderName,
    email: wise.email || undefined,
    iban: wise.iban || undefined,
    currency: wise.currency || undefined,
    receiverType: wise.receiverType === WiseReceiverType.INSTITUTION ? "institution" : "person",
  };
}

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
    async programCurrency(productId) {
      const { program } = await asRead(client.getProgram({ productId }));
      if (!program) throw new Error(`partners returned no program for product ${productId}`);
      return program.currency.toUpperCase();
    },
    async payoutMethods(productId, partnershipIds) {
      const answers = await Promise.all(
        inBatches(partnershipIds, revealBatchSize).map((ids) =>
          asRead(client.revealPayoutMethods({ productId, partnershipIds: ids })),
        ),
      );
      const methods = new Map<string, PayoutDetails>();
      for (const method of answers.flatMap((answer) => answer.methods)) {
        const details = payoutDetailsOf(method);
        if (details) methods.set(method.partnershipId, details);
      }
      return methods;
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
