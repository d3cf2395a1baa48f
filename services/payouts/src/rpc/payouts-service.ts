import { DomainError, enumFilter, fromProtoEnum, type PageTokens } from "@affiliate/platform";
import type { PayoutsService } from "@affiliate/proto/payouts";
import type { ServiceImpl } from "@connectrpc/connect";
import { linesToProto, payoutActionToProto, payoutStatusToProto, payoutToProto } from "../codec.js";
import type { PayoutDeps } from "../domain/finish-drafts.js";
import { generatePayouts } from "../domain/generate-payouts.js";
import { getPayout } from "../domain/get-payout.js";
import { listPayoutsPage } from "../domain/list-payouts.js";
import { updatePayout } from "../domain/update-payout.js";

export interface PayoutsServiceDeps extends PayoutDeps {
  pageTokens: PageTokens;
}

/** Thin handlers: decode, call one use case, encode. */
export function createPayoutsService(deps: PayoutsServiceDeps): ServiceImpl<typeof PayoutsService> {
  const { sql, pageTokens, clock } = deps;
  return {
    async generatePayouts(req) {
      const payouts = await generatePayouts(deps, req.productId);
      return { payouts: payouts.map(payoutToProto) };
    },

    async listPayouts(req) {
      const page = await listPayoutsPage(sql, pageTokens, {
        productId: req.productId,
        status: enumFilter(payoutStatusToProto, req.status),
        partnershipId: req.partnershipId,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
        withLines: req.includeLines,
      });
      return {
        payouts: page.payouts.map(payoutToProto),
        nextPageToken: page.nextPageToken,
        lines: Object.fromEntries(
          [...page.lines].map(([payoutId, lines]) => [payoutId, { lines: linesToProto(lines) }]),
        ),
      };
    },

    async getPayout(req) {
      const { payout, lines } = await getPayout(sql, {
        productId: req.productId,
        payoutId: req.payoutId,
        partnershipId: req.partnershipId,
        withLines: req.includeLines,
      });
      return { payout: payoutToProto(payout), lines: linesToProto(lines) };
    },

    async updatePayout(req) {
      const action = fromProtoEnum(payoutActionToProto, req.action);
      if (!action) throw DomainError.invalidField("action", "Action must be approve, reject, mark_paid or mark_failed");
      const result = await updatePayout(sql, req.productId, req.payoutId, {
        action,
        reference: req.reference,
        now: clock(),
      });
      return { payout: payoutToProto(result.payout), deleted: result.deleted };
    },
  };
}
