import { DomainError, enumFilter, fromProtoEnum, type PageTokens } from "@affiliate/platform";
import type { PayoutsService } from "@affiliate/proto/payouts";
import { PayoutFileFormat } from "@affiliate/proto/payouts";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  linesToProto,
  payoutActionToProto,
  payoutFileFormatToProto,
  payoutStatusToProto,
  payoutToProto,
} from "../codec.js";
import { exportPayouts } from "../domain/export-payouts.js";
import type { PayoutDeps } from "../domain/finish-drafts.js";
import { generatePayouts } from "../domain/generate-payouts.js";
import { getPayout } from "../domain/get-payout.js";
import { importPayoutResults } from "../domain/import-payout-results.js";
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

    async exportPayouts(req) {
      const format = fromProtoEnum(payoutFileFormatToProto, req.format);
      if (!format) throw DomainError.invalidField("format", "Format must be paypal, wise or csv");
      const file = await exportPayouts(deps, req.productId, format);
      return {
        content: file.content,
        exportedCount: BigInt(file.exportedCount),
        exportedCents: file.exportedCents,
        skipped: file.skipped,
        currency: file.currency,
      };
    },

    async importPayoutResults(req) {
      const format =
        req.format === PayoutFileFormat.UNSPECIFIED ? undefined : fromProtoEnum(payoutFileFormatToProto, req.format);
      if (req.format !== PayoutFileFormat.UNSPECIFIED && !format) {
        throw DomainError.invalidField("format", "Format must be paypal, wise or csv");
      }
      const imported = await importPayoutResults(sql, req.productId, { content: req.content, format, now: clock() });
      return {
        fileSha256: imported.fileSha256,
        alreadyImported: imported.alreadyImported,
        format: payoutFileFormatToProto[imported.format],
        paidCount: BigInt(imported.paidCount),
        failedCount: BigInt(imported.failedCount),
        unchangedCount: BigInt(imported.unchangedCount),
        pendingCount: BigInt(imported.pendingCount),
        importedAt: timestampFromDate(imported.importedAt),
        lines: imported.lines,
      };
    },
  };
}
