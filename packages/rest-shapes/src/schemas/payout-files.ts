import { z } from "zod";

export const payoutFileFormatSchema = z.enum(["paypal", "wise", "csv"]);

export type PublicPayoutFileFormat = z.output<typeof payoutFileFormatSchema>;

export const exportPayoutsQuerySchema = z.object({
  format: payoutFileFormatSchema.meta({
    description:
      "paypal: PayPal Payouts' upload CSV (no header row; email, amount, currency, Customer ID, note, PAYPAL) of the payouts whose affiliate chose PayPal. wise: Wise's batch template (name, recipientEmail, paymentReference, receiverType, amountCurrency, amount, sourceCurrency, targetCurrency, IBAN) of those who chose Wise. csv: every approved payout with its method in clear, the ones no provider file can pay with their skipped_reason.",
  }),
  status: z
    .enum(["approved"])
    .optional()
    .meta({ description: "Which payouts: approved (the only value, and the default): those ready to transfer." }),
});

export const importPayoutsQuerySchema = z.object({
  format: payoutFileFormatSchema
    .optional()
    .meta({ description: "The file's layout; recognised from its header when not given." }),
});

/** The body: the file itself, as text/csv. */
export const payoutResultFileSchema = z.string().meta({
  description:
    "The result file, as text/csv: the platform's CSV with the header payout_id,status[,reference] (status paid or failed; reference: the transfer id, or the failure's reason), a PayPal Payouts report (Customer ID, Status, Transaction ID) or a Wise transfer export (paymentReference, status, id). Payouts are named by their id or by the reference the export wrote (PO…).",
  example: "payout_id,status,reference\r\npo_0193c1f2a4b87c55b3a9e0d7f2c4a6b8,paid,tr_123\r\n",
});

export const importedPayoutLineSchema = z.object({
  line: z.int().meta({ description: "The line's number in the file (the header is line 1)." }),
  payout_id: z.string(),
  outcome: z.enum(["paid", "failed", "unchanged", "pending"]).meta({
    description:
      "paid / failed: this import marked the payout so. unchanged: it already had that outcome. pending: the provider has not finished with it; nothing changed.",
  }),
});

export const payoutImportResponseSchema = z.object({
  data: z
    .object({
      file_sha256: z.string().meta({ description: "The file's SHA-256 (hex): a file is imported once." }),
      already_imported: z.boolean().meta({
        description: "True when this file was imported before: nothing changed now; the counts are the first import's.",
      }),
      format: payoutFileFormatSchema,
      paid: z.int().meta({ description: "Payouts the import marked paid (completed)." }),
      failed: z.int().meta({ description: "Payouts the import marked failed." }),
      unchanged: z.int().meta({ description: "Lines whose payout already had that outcome." }),
      pending: z.int().meta({ description: "Lines whose provider status is not final." }),
      imported_at: z.iso.datetime().meta({ description: "When the file was (first) imported." }),
      lines: z
        .array(importedPayoutLineSchema)
        .meta({ description: "Each line's outcome; empty for a repeated import." }),
    })
    .meta({ id: "PayoutImport" }),
});
