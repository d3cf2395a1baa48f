import { normalizeEmail } from "@affiliate/contract-rules";
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
    /** The affiliate's email, as typed: compared normalized. */
    email?: string | undefined;
    /** Compared case-insensitively, as codes are unique. */
    referralCode?: string | undefined;
    pageSize: number;
    pageToken: string;
  },
): Promise<PartnershipPage> {
  const { productId, status, externalId } = query;
  const email = query.email === undefined ? undefined : normalizeEmail(query.email);
  const referralCode = query.referralCode?.toLowerCase();
  // The exact filters are bound by their JSON form, so no value can pass for "any" or for another.
  const exact = JSON.stringify([externalId ?? null, email ?? null, referralCode ?? null]);
  const scope = `partnerships:${productId}:${status ?? "any"}:${exact}`;
  const page = await keysetPage(pageTokens, scope, query, (afterId, limit) =>
    listPartnerships(sql, { productId, status, externalId, email, referralCode, afterId, limit }),
  );
  return { partnerships: page.items, nextPageToken: page.nextPageToken };
}
