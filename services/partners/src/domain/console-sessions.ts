import { randomBytes } from "node:crypto";
import { DomainError, type Queryable, type Sql } from "@affiliate/platform";
import { deleteConsoleSession, findLiveConsoleSession, insertConsoleSession } from "../store/console-sessions.js";
import { lockProductOrThrow } from "../store/products.js";
import { storedHashOf } from "./rules.js";

/** Every console session token starts so: the gateway tells it from an affiliate token by it. */
export const consoleSessionPrefix = "cst_";
/** Five minutes to twelve hours: a working day at most, so a forgotten tab does not stay signed in. */
export const consoleSessionTtlSeconds = { min: 300, max: 43_200, default: 28_800 } as const;

export interface OpenedConsoleSession {
  token: string;
  expiresAt: Date;
}

/**
 * Opens a console session for the product (contract section 19). The caller has checked the
 * product's live secret key; the session is only as strong as that key and dies with it (key
 * rotation deletes the product's sessions).
 */
export async function openConsoleSession(
  sql: Sql,
  productId: string,
  ttlSeconds: number,
): Promise<OpenedConsoleSession> {
  const ttl = ttlSeconds === 0 ? consoleSessionTtlSeconds.default : ttlSeconds;
  if (!Number.isInteger(ttl) || ttl < consoleSessionTtlSeconds.min || ttl > consoleSessionTtlSeconds.max) {
    throw DomainError.invalidField(
      "ttl_seconds",
      `Must be an integer from ${consoleSessionTtlSeconds.min} to ${consoleSessionTtlSeconds.max}`,
    );
  }
  return sql.begin(async (tx) => {
    // Locked as a rotation locks it: a session opened with a key being rotated commits before the
    // rotation deletes the product's sessions, or sees the rotation done and the key gone.
    await lockProductOrThrow(tx, productId);
    const token = consoleSessionPrefix + randomBytes(24).toString("base64url");
    // The database's clock decides expiry, as for affiliate tokens.
    const [{ now } = { now: new Date() }] = await tx<{ now: Date }[]>`select now() as now`;
    const expiresAt = new Date(now.getTime() + ttl * 1000);
    await insertConsoleSession(tx, { hash: storedHashOf(token), productId, expiresAt });
    return { token, expiresAt };
  });
}

/** The product of a live session; UNAUTHENTICATED for anything else (unknown, closed, expired). */
export async function authenticateConsoleSession(
  sql: Queryable,
  token: string,
): Promise<{ productId: string; expiresAt: Date }> {
  const found = token.startsWith(consoleSessionPrefix)
    ? await findLiveConsoleSession(sql, storedHashOf(token))
    : undefined;
  if (!found) throw new DomainError("unauthenticated", "Invalid or expired console session");
  return found;
}

/** Ends the session (sign-out); closing an unknown or closed session is no error. */
export async function closeConsoleSession(sql: Queryable, token: string): Promise<void> {
  await deleteConsoleSession(sql, storedHashOf(token));
}
