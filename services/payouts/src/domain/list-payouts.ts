import { keysetPage, type PageTokens, type Queryable, type Sql } from "@affiliate/platform";
import { linesOfPayouts, listPayouts, type PayoutLine } from "../store/payouts.js";
import type { Payout, PayoutStatus } from "./types.js";

export interface PayoutFilter {
  productId: string;
  status?: PayoutStatus | undefined;
  partnershipId?: string | undefined;
}

type PageQuery = PayoutFilter & { pageSize: number; pageToken: string };

/**
 * One page of payouts, newest first, keyset-paginated with signed tokens (spec 8). Drafts never
 * show. With `withLines`, each payout's lines by payout id: the page and its lines are read in one
 * snapshot (repeatable read), as getPayout reads one payout with its lines, so a refund
 * recalculating a payout meanwhile is seen entirely or not at all and every payout's lines sum
 * exactly to the amount answered. The whole page's lines are one query.
 */
export async function listPayoutsPage(
  sql: Sql,
  pageTokens: PageTokens,
  query: PageQuery & { withLines: boolean },
): Promise<{ payouts: Payout[]; nextPageToken: string; lines: Map<string, PayoutLine[]> }> {
  if (!query.withLines) return { ...(await pageOf(sql, pageTokens, query)), lines: new Map() };
  return sql.begin("isolation level repeatable read read only", async (tx) => {
    const page = await pageOf(tx, pageTokens, query);
    return {
      ...page,
      lines: await linesOfPayouts(
        tx,
        page.payouts.map((payout) => payout.id),
      ),
    };
  });
}

async function pageOf(sql: Queryable, pageTokens: PageTokens, query: PageQuery) {
  const scope = `payouts:${query.productId}:${query.status ?? ""}:${query.partnershipId ?? ""}`;
  const page = await keysetPage(pageTokens, scope, query, (afterId, limit) =>
    listPayouts(sql, { ...query, afterId, limit }),
  );
  return { payouts: page.items, nextPageToken: page.nextPageToken };
}
