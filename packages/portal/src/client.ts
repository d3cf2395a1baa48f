/**
 * The affiliate API (contract section 14) through @affiliate/client, the client merchants use:
 * same origin, the affiliate's token as a bearer, never a cookie; int64 sums read exactly as
 * bigint, and the contract's retries (a 503 or 429 waited out and asked again).
 */

import { ownOriginFetch } from "@affiliate/browser-kit";
import { AffiliateClient, type components, type ItemOf } from "@affiliate/client";

export type Me = components["schemas"]["AffiliateMe"];
export type Stats = components["schemas"]["AffiliateStats"];
export type Period = components["schemas"]["Period"];
export type Commission = ItemOf<"listAffiliateCommissions">;
export type Payout = ItemOf<"listAffiliatePayouts">;
export type PayoutMethod = components["schemas"]["PayoutMethod"];
export type PayoutMethodBody = components["schemas"]["SetPayoutMethodRequest"];

/** A client of this origin's affiliate API, signed in with `token` (none to sign in). */
export function affiliateClient(token?: string): AffiliateClient {
  return new AffiliateClient({
    baseUrl: location.origin,
    ...(token ? { token } : {}),
    retry: { maxAttempts: 3 },
    timeoutMs: 15_000,
    fetch: ownOriginFetch,
  });
}
