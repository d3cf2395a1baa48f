import { DomainError, type PageTokens, type Queryable } from "@affiliate/platform";
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
  const { pageSize } = query;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw DomainError.invalidField("limit", "Must be an integer from 1 to 100");
  }
  const scope = `payouts:${query.productId}:${query.status ?? ""}:${query.partnershipId ?? ""}`;
  const afterId = query.pageToken ? pageTokens.decode(scope, query.pageToken) : undefined;
  const rows = await listPayouts(sql, { ...query, afterId, limit: pageSize + 1 });
  const payouts = rows.slice(0, pageSize);
  const last = payouts.at(-1);
  return { payouts, nextPageToken: rows.length > pageSize && last ? pageTokens.encode(scope, last.id) : "" };
}
