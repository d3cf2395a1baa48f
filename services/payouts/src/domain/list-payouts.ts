import { keysetPage, type PageTokens, type Queryable } from "@affiliate/platform";
import { listPayouts } from "../store/payouts.js";
import type { Payout, PayoutStatus } from "./types.js";

export interface PayoutFilter {
  productId: string;
  status?: PayoutStatus | undefined;
  partnershipId?: string | undefined;
}

/** One page of payouts, newest first, keyset-paginated with signed tokens (spec 8). Drafts never show. */
export async function listPayoutsPage(
  sql: Queryable,
  pageTokens: PageTokens,
  query: PayoutFilter & { pageSize: number; pageToken: string },
): Promise<{ payouts: Payout[]; nextPageToken: string }> {
  const scope = `payouts:${query.productId}:${query.status ?? ""}:${query.partnershipId ?? ""}`;
  const page = await keysetPage(pageTokens, scope, query, (afterId, limit) =>
    listPayouts(sql, { ...query, afterId, limit }),
  );
  return { payouts: page.items, nextPageToken: page.nextPageToken };
}
