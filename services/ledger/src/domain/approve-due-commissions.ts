import type { Sql } from "@affiliate/platform";
import { enqueueCommissionEvent } from "../events/outbox.js";
import { approveDueCommissions as approveDue } from "../store/commissions.js";
import { recordCommissionChange } from "./commission-changes.js";
import { RollupChanges } from "./rollup-changes.js";

/**
 * The hold sweep: approves pending commissions whose hold has ended, in batches, each batch in
 * one transaction with its rollup changes and commission.approved events. Safe to run on every
 * replica at once (rows are claimed with SKIP LOCKED). Returns how many it approved.
 */
export async function approveDueCommissions(sql: Sql, now: Date, batchSize = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const approved = await sql.begin(async (tx) => {
      const commissions = await approveDue(tx, now, batchSize);
      const changes = new RollupChanges();
      for (const commission of commissions) {
        recordCommissionChange(
          changes,
          commission,
          { status: "pending", amountCents: commission.amountCents },
          commission,
        );
        await enqueueCommissionEvent(tx, "commissionApproved", commission);
      }
      await changes.flush(tx);
      return commissions.length;
    });
    total += approved;
    if (approved < batchSize) return total;
  }
}
