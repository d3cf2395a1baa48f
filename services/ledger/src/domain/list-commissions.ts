import { keysetPage, type PageTokens, type Queryable } from "@affiliate/platform";
import { listCommissions } from "../store/commissions.js";
import type { Commission, CommissionStatus } from "./types.js";

export interface CommissionFilter {
  productId: string;
  status?: CommissionStatus | undefined;
  partnershipId?: string | undefined;
  payoutId?: string | undefined;
  /** Only commissions awaiting review: the review queue. */
  flagged?: boolean | undefined;
}

/** One page of commissions, newest first, keyset-paginated like every list (spec 8). */
export async function listCommissionsPage(
  sql: Queryable,
  pageTokens: PageTokens,
  query: CommissionFilter & { pageSize: number; pageToken: string },
): Promise<{ commissions: Commission[]; nextPageToken: string }> {
  const scope = `commissions:${query.productId}:${query.status ?? ""}:${query.partnershipId ?? ""}:${query.payoutId ?? ""}:${query.flagged ? "flagged" : ""}`;
  const page = await keysetPage(pageTokens, scope, query, (afterId, limit) =>
    listCommissions(sql, { ...query, afterId, limit }),
  );
  return { commissions: page.items, nextPageToken: page.nextPageToken };
}
