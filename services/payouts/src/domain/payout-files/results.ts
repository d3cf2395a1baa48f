import { CsvSyntaxError, parseCsv } from "./csv.js";
import type { PayoutFileFormat } from "./formats.js";
import { payoutIdOfReference } from "./reference.js";

/** What a line of a result file says happened to one payout. */
export interface ResultLine {
  line: number;
  payoutId: string;
  /** pending: the provider has not finished with it (nothing to apply yet). */
  outcome: "paid" | "failed" | "pending";
  /** paid: the provider's transfer id; failed: why. Undefined when the file gives none. */
  reference: string | undefined;
}

/** Line number to the reasons it is refused. */
export type LineRefusals = Map<number, string[]>;

export const maxResultReferenceLength = 500;

/** How a layout's header names the columns an import reads (compared trimmed, case-insensitively). */
interface ResultLayout {
  payout: readonly string[];
  status: readonly string[];
  reference: readonly string[];
  /** The provider's status (lowercase) to an outcome; undefined: not a status of this provider. */
  outcome(status: string): ResultLine["outcome"] | undefined;
  statusHelp: string;
  /** Prefix of a failure's reason when the file gives the status only. */
  provider: string;
}

const paypalOutcomes: Record<string, ResultLine["outcome"]> = {
  success: "paid",
  completed: "paid",
  failed: "failed",
  returned: "failed",
  blocked: "failed",
  refunded: "failed",
  reversed: "failed",
  denied: "failed",
  canceled: "failed",
  cancelled: "failed",
  pending: "pending",
  unclaimed: "pending",
  onhold: "pending",
  new: "pending",
  processing: "pending",
};

const wiseOutcomes: Record<string, ResultLine["outcome"]> = {
  outgoing_payment_sent: "paid",
  completed: "paid",
  paid: "paid",
  cancelled: "failed",
  funds_refunded: "failed",
  bounced_back: "failed",
  charged_back: "failed",
  failed: "failed",
  incoming_payment_waiting: "pending",
  incoming_payment_initiated: "pending",
  processing: "pending",
  funds_converted: "pending",
  waiting_recipient_input_to_proceed: "pending",
};

const layouts: Record<PayoutFileFormat, ResultLayout> = {
  csv: {
    payout: ["payout_id"],
    status: ["status"],
    reference: ["reference"],
    outcome: (status) => (status === "paid" || status === "failed" ? status : undefined),
    statusHelp: "paid or failed",
    provider: "",
  },
  paypal: {
    payout: ["customer id", "sender_item_id", "sender item id"],
    status: ["status", "transaction status", "transaction_status"],
    reference: ["transaction id", "transaction_id", "payout_item_id", "payout item id"],
    outcome: (status) => paypalOutcomes[status],
    statusHelp: "a PayPal payout item status (SUCCESS, FAILED, RETURNED, UNCLAIMED, …)",
    provider: "PayPal",
  },
  wise: {
    payout: ["paymentreference", "payment reference", "reference"],
    status: ["status", "transfer status"],
    reference: ["id", "transfer id", "transferid", "transfer_id"],
    outcome: (status) => wiseOutcomes[status],
    statusHelp: "a Wise transfer status (outgoing_payment_sent, cancelled, funds_refunded, bounced_back, …)",
    provider: "Wise",
  },
};

/**
 * What the payout keeps: a paid line's transfer id; a failed line's reason, which for a provider's
 * file is its status, with the transfer id when there is one (`PayPal: RETURNED (5TY…)`).
 */
function referenceOf(layout: ResultLayout, outcome: ResultLine["outcome"], status: string, given: string) {
  if (outcome !== "failed" || layout.provider === "") return given === "" ? undefined : given;
  const reason = `${layout.provider}: ${status}${given === "" ? "" : ` (${given})`}`;
  return [...reason].slice(0, maxResultReferenceLength).join("");
}

const headerHelp =
  "The first line must be a header: payout_id,status[,reference] for the platform's CSV, a PayPal Payouts report's (Customer ID, Status, Transaction ID) or a Wise transfer export's (paymentReference, status, id)";

const columnOf = (header: string[], names: readonly string[]) =>
  header.findIndex((cell) => names.includes(cell.trim().toLowerCase()));

/** The layout the header names, when the caller did not say. */
function recognise(header: string[]): PayoutFileFormat | undefined {
  const order: PayoutFileFormat[] = ["csv", "paypal", "wise"];
  return order.find((format) => {
    const layout = layouts[format];
    return columnOf(header, layout.payout) >= 0 && columnOf(header, layout.status) >= 0;
  });
}

/**
 * Reads a result file (contract section 19) into its lines, or refuses it line by line: every
 * problem of every line, so a person fixes the file in one go. Nothing is looked up here: whether
 * a payout exists and may take the outcome is the import's question.
 */
export function readResultFile(
  text: string,
  requested: PayoutFileFormat | undefined,
): { format: PayoutFileFormat; lines: ResultLine[] } | { refusals: LineRefusals } {
  const refusals: LineRefusals = new Map();
  const refuse = (line: number, message: string) => refusals.set(line, [...(refusals.get(line) ?? []), message]);
  let records: ReturnType<typeof parseCsv>;
  try {
    records = parseCsv(text);
  } catch (error) {
    if (!(error instanceof CsvSyntaxError)) throw error;
    refuse(error.line, error.message);
    return { refusals };
  }
  const [header, ...rows] = records;
  if (!header) {
    refuse(1, `The file is empty. ${headerHelp}`);
    return { refusals };
  }
  const format = requested ?? recognise(header.cells);
  const layout = format ? layouts[format] : undefined;
  const payoutColumn = layout ? columnOf(header.cells, layout.payout) : -1;
  const statusColumn = layout ? columnOf(header.cells, layout.status) : -1;
  if (!format || !layout || payoutColumn < 0 || statusColumn < 0) {
    refuse(header.line, `Unrecognised header${requested ? ` for format ${requested}` : ""}. ${headerHelp}`);
    return { refusals };
  }
  if (format === "csv") {
    const names = header.cells.map((cell) => cell.trim().toLowerCase()).join(",");
    if (names !== "payout_id,status" && names !== "payout_id,status,reference") {
      refuse(header.line, `The header must be payout_id,status or payout_id,status,reference, not ${names}`);
      return { refusals };
    }
  }
  const referenceColumn = columnOf(header.cells, layout.reference);
  const firstLineOf = new Map<string, number>();
  const lines: ResultLine[] = [];
  for (const { line, cells } of rows) {
    if (format === "csv" && cells.length !== header.cells.length) {
      refuse(line, `Expected ${header.cells.length} fields, found ${cells.length}`);
      continue;
    }
    const reference = (cells[payoutColumn] ?? "").trim();
    const payoutId = payoutIdOfReference(reference);
    if (!payoutId) {
      refuse(line, reference === "" ? "No payout id" : `Unknown payout ${reference}`);
    } else if (firstLineOf.has(payoutId)) {
      refuse(line, `Payout ${payoutId} is also on line ${firstLineOf.get(payoutId)}`);
    } else {
      firstLineOf.set(payoutId, line);
    }
    const status = (cells[statusColumn] ?? "").trim();
    const outcome = layout.outcome(format === "csv" ? status : status.toLowerCase());
    if (!outcome)
      refuse(line, `Status ${status === "" ? "missing" : `"${status}" unknown`}: must be ${layout.statusHelp}`);
    const given = referenceColumn >= 0 ? (cells[referenceColumn] ?? "").trim() : "";
    if ([...given].length > maxResultReferenceLength) {
      refuse(line, `The reference is longer than ${maxResultReferenceLength} characters`);
    }
    if (!payoutId || !outcome || refusals.has(line)) continue;
    lines.push({ line, payoutId, outcome, reference: referenceOf(layout, outcome, status, given) });
  }
  return refusals.size > 0 ? { refusals } : { format, lines };
}
