import { keysetPage, type PageTokens, type Queryable } from "@affiliate/platform";
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
  query: {
    productId: string;
    status: PartnershipStatus | undefined;
    externalId?: string | undefined;
    pageSize: number;
    pageToken: string;
  },
): Promise<PartnershipPage> {
  const { productId, status, externalId } = query;
  // The external id is bound by its JSON form, so no id can pass for "any" or for another.
  const scope = `partnerships:${productId}:${status ?? "any"}:${JSON.stringify(externalId ?? null)}`;
  const page = await keysetPage(pageTokens, scope, query, (afterId, limit) =>
    listPartnerships(sql, { productId, status, externalId, afterId, limit }),
  );
  return { partnerships: page.items, nextPageToken: page.nextPageToken };
}
