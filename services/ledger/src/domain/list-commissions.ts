import { DomainError, type PageTokens, type Queryable } from "@affiliate/platform";
import { listCommissions } from "../store/commissions.js";
import type { Commission, CommissionStatus } from "./types.js";

export interface CommissionFilter {
  productId: string;
  status?: CommissionStatus | undefined;
  partnershipId?: string | undefined;
  payoutId?: string | undefined;
}

/** One page of commissions, newest first, keyset-paginated like every list (spec 8). */
export async function listCommissionsPage(
  sql: Queryable,
  pageTokens: PageTokens,
  query: CommissionFilter & { pageSize: number; pageToken: string },
): Promise<{ commissions: Commission[]; nextPageToken: string }> {
  const { pageSize } = query;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw DomainError.invalidField("limit", "Must be an integer from 1 to 100");
  }
  const scope = `commissions:${query.productId}:${query.status ?? ""}:${query.partnershipId ?? ""}:${query.payoutId ?? ""}`;
  const afterId = query.pageToken ? pageTokens.decode(scope, query.pageToken) : undefined;
  const rows = await listCommissions(sql, { ...query, afterId, limit: pageSize + 1 });
  const commissions = rows.slice(0, pageSize);
  const last = commissions.at(-1);
  return { commissions, nextPageToken: rows.length > pageSize && last ? pageTokens.encode(scope, last.id) : "" };
}
