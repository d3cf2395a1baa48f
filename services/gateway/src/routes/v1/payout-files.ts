import { callTimeout } from "@affiliate/platform";
import { PayoutFileFormat, type PayoutsService } from "@affiliate/proto/payouts";
import { isoTime } from "@affiliate/rest-shapes/mappers/common";
import {
  exportPayoutsQuerySchema,
  importPayoutsQuerySchema,
  type PublicPayoutFileFormat,
  payoutImportResponseSchema,
  payoutResultFileSchema,
} from "@affiliate/rest-shapes/schemas/payout-files";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { HttpError } from "../../errors.js";
import { defineRoute } from "../../http/define-route.js";

export interface PayoutFilesRouteDeps {
  payouts: Client<typeof PayoutsService>;
}

const formatValues: Record<PublicPayoutFileFormat, PayoutFileFormat> = {
  csv: PayoutFileFormat.CSV,
  paypal: PayoutFileFormat.PAYPAL,
  wise: PayoutFileFormat.WISE,
};
const formatNames = Object.fromEntries(Object.entries(formatValues).map(([name, value]) => [value, name])) as Record<
  PayoutFileFormat,
  PublicPayoutFileFormat
>;

/** At most this many skipped payouts are named in the export's header (the csv format lists them all). */
export const skippedHeaderLimit = 100;

/** A file's work is in proportion to the program's payouts, not a lookup: the deadline of a generation. */
const fileTimeoutMs = 5 * 60 * 1000;

const csvMediaType = "text/csv";

const tags: [string] = ["Payouts"];

const exportHeaders = z.object({
  "content-disposition": z.string().meta({ description: 'attachment; filename="payouts-<format>-<date>.csv"' }),
  "payouts-exported-count": z.string().meta({ description: "How many payouts the file pays." }),
  "payouts-exported-cents": z.string().meta({ description: "Their sum, in cents of the program's currency." }),
  "payouts-skipped-count": z.string().meta({ description: "Approved payouts the file leaves out." }),
  "payouts-skipped": z.string().meta({
    description: `The first ${skippedHeaderLimit} of them as payout_id=reason, comma-separated (reasons: no_payout_method, other_payout_method, amount_not_positive); format=csv lists every one.`,
  }),
});

/** The import's body: the file's text, as a text/csv body arrives (anything else is refused). */
function resultFileOf(body: unknown, request: FastifyRequest): string {
  if (typeof body !== "string" || !(request.headers["content-type"] ?? "").toLowerCase().startsWith(csvMediaType)) {
    throw new HttpError(415, { error: "Send the result file itself as the body, with content-type text/csv" });
  }
  return body;
}

/**
 * Payout files (contract section 19): the batch file a payment provider takes for the approved
 * payouts, and the provider's result file back, applied once.
 */
export async function payoutFilesRoutes(app: FastifyInstance, { payouts }: PayoutFilesRouteDeps) {
  // The result file arrives as text/csv, read as text; only this plugin's routes take it.
  app.addContentTypeParser(csvMediaType, { parseAs: "string" }, (_request, body, done) => done(null, body));

  defineRoute(app, {
    method: "GET",
    url: "/payouts/export",
    operationId: "exportPayouts",
    tags,
    summary: "The batch file a payment provider takes for the approved payouts",
    description:
      "Writes the file from the affiliates' payout methods (in clear: the one place they are). A payout whose affiliate set no method, chose the other provider, or whose amount is not above 0 is left out and named in the Payouts-Skipped header (format=csv lists every approved payout, with skipped_reason). Payouts are named by a 28-character reference (PO…, the payout id in base 32, which PayPal's 30-character Customer ID holds); the import reads it back. The export changes nothing: payouts stay approved until a result file is imported (or mark_paid). With no approved payout, the file is only its header (PayPal's format has none: an empty file).",
    access: "management",
    query: exportPayoutsQuerySchema,
    answers: {
      200: {
        description: "The file (text/csv, UTF-8, CRLF line ends)",
        schema: z.string(),
        contentType: "text/csv",
        headers: exportHeaders,
      },
      400: {
        description:
          "A format other than paypal, wise or csv, a status other than approved, or an unknown query parameter",
      },
    },
    handler: async ({ query, request, reply }) => {
      const file = await payouts.exportPayouts(
        { productId: request.productId, format: formatValues[query.format] },
        callTimeout(fileTimeoutMs),
      );
      const date = new Date().toISOString().slice(0, 10);
      const named = file.skipped.slice(0, skippedHeaderLimit).map((skip) => `${skip.payoutId}=${skip.reason}`);
      return reply
        .type(`${csvMediaType}; charset=utf-8`)
        .header("content-disposition", `attachment; filename="payouts-${query.format}-${date}.csv"`)
        .header("payouts-exported-count", file.exportedCount.toString())
        .header("payouts-exported-cents", file.exportedCents.toString())
        .header("payouts-skipped-count", String(file.skipped.length))
        .header("payouts-skipped", named.join(", "))
        .send(file.content);
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/payouts/import",
    operationId: "importPayoutResults",
    tags,
    summary: "Mark payouts paid or failed from a provider's result file",
    description:
      "All or nothing per file: every line must name an approved payout of the program (or one that already has the line's outcome: unchanged) with a status the format knows; otherwise nothing is applied and the answer is the validation envelope with one fieldErrors entry per refused line, keyed `line N`. A paid line completes the payout (its reference becomes gateway_transfer_id; payout.completed is sent and its commissions become paid); a failed line fails it (the reason is kept), and it can be approved again. A provider status that is not final (PayPal UNCLAIMED, a Wise transfer still processing) changes nothing. The file's SHA-256 is kept: the same file again answers 200 with already_imported true and the first import's counts, and changes nothing, also when both arrive at once.",
    access: "management",
    query: importPayoutsQuerySchema,
    body: payoutResultFileSchema,
    bodyContentType: csvMediaType,
    parseBody: resultFileOf,
    answers: {
      200: {
        description: "What the file did (or, already_imported, what it did the first time)",
        schema: payoutImportResponseSchema,
      },
      400: {
        description:
          "The file was refused, nothing applied: the validation envelope, fieldErrors keyed `line N` (a bad header, a field count, an unknown payout, an unknown status, a payout in a state the line cannot move, a payout listed twice); or an unknown query parameter",
      },
      415: { description: "A body that is not text/csv" },
    },
    handler: async ({ query, body, request }) => {
      const imported = await payouts.importPayoutResults(
        {
          productId: request.productId,
          content: body,
          format: query.format ? formatValues[query.format] : PayoutFileFormat.UNSPECIFIED,
        },
        callTimeout(fileTimeoutMs),
      );
      return {
        data: {
          file_sha256: imported.fileSha256,
          already_imported: imported.alreadyImported,
          format: formatNames[imported.format],
          paid: Number(imported.paidCount),
          failed: Number(imported.failedCount),
          unchanged: Number(imported.unchangedCount),
          pending: Number(imported.pendingCount),
          imported_at: isoTime(imported.importedAt, "import.imported_at", "payouts"),
          lines: imported.lines.map((line) => ({ line: line.line, payout_id: line.payoutId, outcome: line.outcome })),
        },
      };
    },
  });
}
