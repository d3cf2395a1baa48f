import { createHash } from "node:crypto";
import { DomainError, type Sql } from "@affiliate/platform";
import { enqueuePayoutEvents } from "../events/outbox.js";
import { claimImport, findImport, lockPayouts, recordImportCounts } from "../store/payout-imports.js";
import { setStatus } from "../store/payouts.js";
import type { PayoutFileFormat } from "./payout-files/formats.js";
import { type LineRefusals, type ResultLine, readResultFile } from "./payout-files/results.js";
import type { Payout } from "./types.js";

export type ImportedLineOutcome = "paid" | "failed" | "unchanged" | "pending";

export interface PayoutImport {
  fileSha256: string;
  alreadyImported: boolean;
  format: PayoutFileFormat;
  paidCount: number;
  failedCount: number;
  unchangedCount: number;
  pendingCount: number;
  importedAt: Date;
  lines: { line: number; payoutId: string; outcome: ImportedLineOutcome }[];
}

/** The refusal of a whole file: one field error per refused line, keyed `line N`. */
function refused(refusals: LineRefusals): DomainError {
  const lines = [...refusals.keys()].sort((a, b) => a - b);
  const fieldErrors = Object.fromEntries(lines.map((line) => [`line ${line}`, refusals.get(line) ?? []]));
  const count = lines.length === 1 ? "1 line is" : `${lines.length} lines are`;
  const error = new DomainError("invalid_argument", `Nothing was imported: ${count} refused`, fieldErrors, [
    `Nothing was imported: ${count} refused (first: line ${lines[0]})`,
  ]);
  error.reason = "payout_file_refused";
  return error;
}

/**
 * What one line does to its payout, or why it cannot: paid takes an approved payout to completed
 * (and one already completed stays as it is), failed takes an approved payout to failed (and one
 * already failed stays); any other state refuses the line.
 */
function decide(line: ResultLine, payout: Payout | undefined): ImportedLineOutcome | string {
  if (!payout) return `Unknown payout ${line.payoutId}`;
  if (line.outcome === "pending") return "pending";
  if (line.outcome === "paid") {
    if (payout.status === "approved") return "paid";
    if (payout.status === "completed") return "unchanged";
    return `Payout ${payout.id} is ${payout.status}: only an approved payout can be marked paid`;
  }
  if (payout.status === "approved") return "failed";
  if (payout.status === "failed") return "unchanged";
  return `Payout ${payout.id} is ${payout.status}: only an approved payout can be marked failed`;
}

/**
 * ImportPayoutResults (contract section 19): a provider's result file, or the plain CSV, applied
 * all or nothing. The file is read and checked first (syntax, header, each line's payout
 * reference and status); then, in one transaction, its SHA-256 is claimed for the product (a file
 * imported before answers its first import's counts and changes nothing), its payouts are locked
 * in id order, every line is checked against its payout's state, and only when no line is
 * refused are the payouts completed (with payout.completed, on which the ledger marks their
 * commissions paid) or failed. Any refusal rolls the whole file back, the claim included, and
 * names every refused line. Two imports of one file at once: the second waits on the claim and
 * then finds the file imported.
 */
export async function importPayoutResults(
  sql: Sql,
  productId: string,
  file: { content: string; format: PayoutFileFormat | undefined; now: Date },
): Promise<PayoutImport> {
  const read = readResultFile(file.content, file.format);
  const digest = createHash("sha256").update(file.content, "utf8").digest();
  const fileSha256 = digest.toString("hex");
  if ("refusals" in read) {
    // A file imported before may no longer read cleanly against today's rules; its hash decides.
    const earlier = await findImport(sql, productId, digest);
    if (earlier) return { ...earlier, fileSha256, alreadyImported: true, lines: [] };
    throw refused(read.refusals);
  }
  return sql.begin(async (tx) => {
    if (!(await claimImport(tx, productId, digest, read.format))) {
      const earlier = await findImport(tx, productId, digest);
      if (!earlier) throw new Error("an import claim conflicted but its row is missing");
      return { ...earlier, fileSha256, alreadyImported: true, lines: [] };
    }
    const payouts = new Map(
      (
        await lockPayouts(
          tx,
          productId,
          read.lines.map((line) => line.payoutId),
        )
      ).map((payout) => [payout.id, payout]),
    );
    const refusals: LineRefusals = new Map();
    const decided = read.lines.map((line) => {
      const decision = decide(line, payouts.get(line.payoutId));
      if (!["paid", "failed", "unchanged", "pending"].includes(decision)) refusals.set(line.line, [decision]);
      return { line, outcome: decision as ImportedLineOutcome };
    });
    if (refusals.size > 0) throw refused(refusals);

    const completed: Payout[] = [];
    for (const { line, outcome } of decided) {
      if (outcome === "paid") {
        completed.push(
          await setStatus(tx, line.payoutId, {
            status: "completed",
            paidAt: file.now,
            gatewayTransferId: line.reference,
          }),
        );
      } else if (outcome === "failed") {
        await setStatus(tx, line.payoutId, { status: "failed", failureReason: line.reference });
      }
    }
    await enqueuePayoutEvents(tx, "payoutCompleted", completed);
    const count = (outcome: ImportedLineOutcome) => decided.filter((entry) => entry.outcome === outcome).length;
    const record = await recordImportCounts(tx, productId, digest, {
      paidCount: count("paid"),
      failedCount: count("failed"),
      unchangedCount: count("unchanged"),
      pendingCount: count("pending"),
    });
    return {
      ...record,
      fileSha256,
      alreadyImported: false,
      lines: decided.map(({ line, outcome }) => ({ line: line.line, payoutId: line.payoutId, outcome })),
    };
  });
}
