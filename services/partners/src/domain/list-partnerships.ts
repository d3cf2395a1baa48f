import { DomainError, type PageTokens, type Queryable } from "@affiliate/platform";
import { listPartnerships } from "../store/partnerships.js";
import type { Partnership, PartnershipStatus } from "./types.js";

export interface PartnershipPage {
  partnerships: Partnership[];
  /** Empty on the last page. */
  nextPageToken: string;
}

/**
 * One page of the program's partnerships, newest first (spec 4.3, 8). Keyset pagination on the
 * time-ordered id: a page costs the same at any depth, and inserts or deletes between requests
 * cause no skips or duplicates. The token is bound to the product and the status filter.
 */
export async function listPartnershipsPage(
  sql: Queryable,
  pageTokens: PageTokens,
  query: { productId: string; status: PartnershipStatus | undefined; pageSize: number; pageToken: string },
): Promise<PartnershipPage> {
  const { productId, status, pageSize } = query;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw DomainError.invalidField("limit", "Must be an integer from 1 to 100");
  }
  const scope = `partnerships:${productId}:${status ?? "any"}`;
  const afterId = query.pageToken ? pageTokens.decode(scope, query.pageToken) : undefined;
  const rows = await listPartnerships(sql, { productId, status, afterId, limit: pageSize + 1 });
  const partnerships = rows.slice(0, pageSize);
  const last = partnerships.at(-1);
  return {
    partnerships,
    nextPageToken: rows.length > pageSize && last ? pageTokens.encode(scope, last.id) : "",
  };
}
