import type { Sql } from "@affiliate/platform";
import { getPayoutOrThrow, type PayoutLine, payoutLines } from "../store/payouts.js";
import type { Payout } from "./types.js";

/**
 * One payout, optionally only if it is the partnership's (the affiliate API's scope), and with
 * `withLines` what makes up its amount: read in one snapshot (repeatable read), so a refund
 * recalculating the payout meanwhile is seen entirely or not at all, and the lines sum exactly
 * to the amount answered (contract 8: a payout's amount is its links plus its adjustments).
 */
export async function getPayout(
  sql: Sql,
  query: { productId: string; payoutId: string; partnershipId?: string | undefined; withLines: boolean },
): Promise<{ payout: Payout; lines: PayoutLine[] }> {
  const { productId, payoutId, partnershipId } = query;
  if (!query.withLines) return { payout: await getPayoutOrThrow(sql, productId, payoutId, partnershipId), lines: [] };
  return sql.begin("isolation level repeatable read read only", async (tx) => {
    const payout = await getPayoutOrThrow(tx, productId, payoutId, partnershipId);
    return { payout, lines: await payoutLines(tx, payout.id) };
  });
}
