import type { PayoutDetails } from "@affiliate/contract-rules";
import { csvText } from "./csv.js";
import { decimalAmount } from "./money.js";
import { payoutReference } from "./reference.js";

/** The layouts of payout files (contract section 19). */
export type PayoutFileFormat = "csv" | "paypal" | "wise";

/** Why an approved payout is not in a provider's file. */
export type SkipReason = "no_payout_method" | "other_payout_method" | "amount_not_positive";

/** An approved payout with what the file needs of it. */
export interface ExportablePayout {
  id: string;
  partnershipId: string;
  amountCents: bigint;
  /** The partnership's method in clear; undefined when it has none. */
  details: PayoutDetails | undefined;
}

/** `currency` uppercase ISO 4217 (the program's). */
interface Layout {
  /** The file's first lines (none for PayPal, whose upload takes no header). */
  header: string[][];
  /** Why the payout is left out, or undefined when the file pays it. */
  skip(payout: ExportablePayout): SkipReason | undefined;
  /** The payout's row; `skipped` is the reason for a layout that lists every payout. */
  row(payout: ExportablePayout, currency: string, skipped: SkipReason | undefined): string[] | undefined;
}

const baseSkip = (payout: ExportablePayout, method: PayoutDetails["type"] | undefined): SkipReason | undefined => {
  if (!payout.details) return "no_payout_method";
  if (method !== undefined && payout.details.type !== method) return "other_payout_method";
  if (payout.amountCents <= 0n) return "amount_not_positive";
  return undefined;
};

/** What the note of a PayPal item says to the recipient (at most 400 characters). */
const paypalNote = (payout: ExportablePayout) => `Affiliate payout ${payout.id}`;

const layouts: Record<PayoutFileFormat, Layout> = {
  // The platform's own: every approved payout, paid by hand or by any provider, the skipped ones
  // with their reason, so the file is also the list of what is missing.
  csv: {
    header: [
      [
        "payout_id",
        "partnership_id",
        "amount",
        "currency",
        "amount_cents",
        "method",
        "recipient_name",
        "recipient_email",
        "iban",
        "target_currency",
        "reference",
        "skipped_reason",
      ],
    ],
    skip: (payout) => baseSkip(payout, undefined),
    row(payout, currency, skipped) {
      const details = payout.details;
      return [
        payout.id,
        payout.partnershipId,
        decimalAmount(payout.amountCents, currency),
        currency,
        payout.amountCents.toString(),
        details?.type ?? "",
        details?.type === "wise" ? details.accountHolderName : "",
        details?.email ?? "",
        details?.type === "wise" ? (details.iban ?? "") : "",
        details?.type === "wise" ? (details.currency ?? currency) : details ? currency : "",
        payoutReference(payout.id),
        skipped ?? "",
      ];
    },
  },
  // PayPal Payouts' web upload: no header; recipient, amount, currency, Customer ID (at most 30
  // characters: the payout's reference), note to the recipient, recipient wallet.
  paypal: {
    header: [],
    skip: (payout) => baseSkip(payout, "paypal"),
    row(payout, currency) {
      if (payout.details?.type !== "paypal") return undefined;
      return [
        payout.details.email,
        decimalAmount(payout.amountCents, currency),
        currency,
        payoutReference(payout.id),
        paypalNote(payout),
        "PAYPAL",
      ];
    },
  },
  // Wise's batch template for bank details (IBAN); a row without an IBAN carries the recipient's
  // email, and Wise asks them for their bank details. The amount is fixed in the source currency.
  wise: {
    header: [
      [
        "name",
        "recipientEmail",
        "paymentReference",
        "receiverType",
        "amountCurrency",
        "amount",
        "sourceCurrency",
        "targetCurrency",
        "IBAN",
      ],
    ],
    skip: (payout) => baseSkip(payout, "wise"),
    row(payout, currency) {
      const details = payout.details;
      if (details?.type !== "wise") return undefined;
      return [
        details.accountHolderName,
        details.email ?? "",
        payoutReference(payout.id),
        details.receiverType === "institution" ? "INSTITUTION" : "PERSON",
        "source",
        decimalAmount(payout.amountCents, currency),
        currency,
        details.currency ?? currency,
        details.iban ?? "",
      ];
    },
  },
};

/** A provider's batch file for `payouts` (oldest first), and the payouts it leaves out. */
export function writePayoutFile(format: PayoutFileFormat, payouts: readonly ExportablePayout[], currency: string) {
  const layout = layouts[format];
  const rows: string[][] = [...layout.header];
  const skipped: { payoutId: string; reason: SkipReason }[] = [];
  let exportedCents = 0n;
  let exportedCount = 0;
  for (const payout of payouts) {
    const reason = layout.skip(payout);
    if (reason) skipped.push({ payoutId: payout.id, reason });
    else {
      exportedCount++;
      exportedCents += payout.amountCents;
    }
    const row = reason && format !== "csv" ? undefined : layout.row(payout, currency, reason);
    if (row) rows.push(row);
  }
  return { content: csvText(rows), exportedCount, exportedCents, skipped };
}
