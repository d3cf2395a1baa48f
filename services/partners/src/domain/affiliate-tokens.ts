import { randomBytes } from "node:crypto";
import { DomainError, type Queryable, type Sql } from "@affiliate/platform";
import { outbox } from "../events/outbox.js";
import { deleteTokens, findLiveToken, insertToken } from "../store/affiliate-access.js";
import { lockPartnershipOrThrow } from "../store/partnerships.js";
import { storedHashOf } from "./rules.js";

/** Every affiliate token starts so: the gateway tells it from an API key by it. */
export const affiliateTokenPrefix = "apt_";
export const tokenTtlSeconds = { min: 60, max: 86_400, default: 3600 } as const;

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** A fresh token, 192 random bits; only its hash is stored. */
export function generateAffiliateToken(): string {
  return affiliateTokenPrefix + randomBytes(24).toString("base64url");
}

/**
 * Stores a new token of the partnership in the caller's transaction; the partnership must be
 * active (locked by the caller, so a removal cannot slip between the check and the insert).
 */
export async function issueToken(
  tx: Queryable,
  partnership: { productId: string; id: string },
  ttlSeconds: number,
): Promise<IssuedToken> {
  const token = generateAffiliateToken();
  // The database's clock decides expiry everywhere else, so it decides it here too.
  const [{ now } = { now: new Date() }] = await tx<{ now: Date }[]>`select now() as now`;
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await insertToken(tx, {
    hash: storedHashOf(token),
    productId: partnership.productId,
    partnershipId: partnership.id,
    expiresAt,
  });
  return { token, expiresAt };
}

/** Mints a token for an active partnership (contract section 14). */
export async function mintAffiliateToken(
  sql: Sql,
  productId: string,
  partnershipId: string,
  ttlSeconds: number,
): Promise<IssuedToken> {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < tokenTtlSeconds.min || ttlSeconds > tokenTtlSeconds.max) {
    throw DomainError.invalidField(
      "ttl_seconds",
      `Must be an integer from ${tokenTtlSeconds.min} to ${tokenTtlSeconds.max}`,
    );
  }
  return sql.begin(async (tx) => {
    const partnership = await lockPartnershipOrThrow(tx, productId, partnershipId);
    if (partnership.status !== "active") {
      throw new DomainError(
        "failed_precondition",
        `Tokens are issued for active affiliates only; this one is ${partnership.status}`,
      );
    }
    return issueToken(tx, { productId, id: partnershipId }, ttlSeconds);
  });
}

/**
 * Revokes every token of the partnership. The event commits with the deletion, so every gateway
 * evicts the tokens it cached; published even when none was alive (a token the gateway cached may
 * have been minted a moment before), and harmless to repeat.
 */
export async function revokeAffiliateTokens(sql: Sql, productId: string, partnershipId: string): Promise<number> {
  return sql.begin(async (tx) => {
    await lockPartnershipOrThrow(tx, productId, partnershipId);
    const revoked = await deleteTokens(tx, partnershipId);
    await outbox.partnershipTokensRevoked(tx, productId, partnershipId);
    return revoked;
  });
}

/** What a live token reads; UNAUTHENTICATED for anything else (unknown, expired, revoked, inactive). */
export async function authenticateAffiliateToken(
  sql: Queryable,
  token: string,
): Promise<{ productId: string; partnershipId: string; expiresAt: Date }> {
  const found = token.startsWith(affiliateTokenPrefix) ? await findLiveToken(sql, storedHashOf(token)) : undefined;
  if (!found) throw new DomainError("unauthenticated", "Invalid or expired affiliate token");
  return found;
}
