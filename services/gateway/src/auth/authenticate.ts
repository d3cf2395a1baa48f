import { KeyMode } from "@affiliate/proto/partners";
import type { FastifyRequest } from "fastify";
import { HttpError } from "../errors.js";
import { affiliateTokenPrefix, type KeyCache } from "./key-cache.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The product that owns the request's API key; set by authentication. */
    productId: string;
    /** True when the key is a test-mode key (sk_test_, pk_test_); only tracking accepts one. */
    testMode: boolean;
    /** The one partnership an affiliate token reads; set by affiliate authentication only. */
    partnershipId: string;
    /** True when the management API was called with a console session (Bearer cst_…), not a key. */
    consoleSession: boolean;
  }
}

export const authErrors = {
  missing: "Missing x-api-key header",
  format: "Invalid API key format",
  revoked: "Invalid or revoked API key",
  testMode: "Test-mode keys cannot access the management API",
} as const;

/** A publishable key anywhere but the click endpoint: 403 naming the kind of key (contract section 17). */
export const publishableKeyError = (prefix: "pk_live_" | "pk_test_") =>
  `Publishable keys (${prefix}…) can only record clicks (POST /events/click): use a secret key (sk_live_…) here`;

/**
 * Who may call: the management API takes live secret keys only; tracking takes live and test
 * secret keys; the click endpoint any key, publishable keys included (they are made to sit in a
 * page); the affiliate API takes affiliate tokens (Authorization: Bearer apt_…).
 */
export type KeyPolicy = "management" | "tracking" | "click" | "affiliate";

const isPublishable = (mode: KeyMode) => mode === KeyMode.PUBLISHABLE_LIVE || mode === KeyMode.PUBLISHABLE_TEST;

export const affiliateAuthErrors = {
  missing: "Missing bearer token: send Authorization: Bearer apt_…",
  invalid: "Invalid or expired affiliate token",
} as const;

/** The bearer token of an Authorization header, or undefined when there is none. */
export function bearerTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== "string") return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match?.[1];
}

/**
 * Resolves `Authorization: Bearer apt_…` to the partnership it reads (contract section 14),
 * through the same cache as API keys. Anything but a live token is 401 `{ error }`.
 */
export function authenticateAffiliate(cache: KeyCache) {
  return async (request: FastifyRequest): Promise<void> => {
    const token = bearerTokenOf(request);
    if (token === undefined) throw new HttpError(401, { error: affiliateAuthErrors.missing });
    if (!token.startsWith(affiliateTokenPrefix)) throw new HttpError(401, { error: affiliateAuthErrors.invalid });
    const resolution = await cache.resolve(token);
    if (resolution.kind !== "affiliate" || resolution.expiresAt.getTime() <= Date.now()) {
      throw new HttpError(401, { error: affiliateAuthErrors.invalid });
    }
    request.productId = resolution.productId;
    request.partnershipId = resolution.partnershipId;
    request.testMode = false;
  };
}

/** Console session tokens start so (contract section 19). */
export const consoleSessionPrefix = "cst_";

export const consoleAuthErrors = {
  invalid: "Invalid or expired console session: sign in again",
} as const;

/** Asks partners which product a console session acts for; undefined when it is not live. */
export type ResolveConsoleSession = (token: string) => Promise<{ productId: string } | undefined>;

/**
 * Resolves `x-api-key` to the product it belongs to (spec section 5, contract sections 2 and 17).
 * On the management API a test key of an existing product is 403; on tracking it selects sandbox
 * mode. A publishable key (pk_) is 403 everywhere but the click endpoint. The 401 answers are the
 * same everywhere.
 *
 * The management API also takes a console session, `Authorization: Bearer cst_…`, when no key
 * is sent. Sessions are resolved with partners on every request, never cached: a console is one
 * person clicking, and a sign-out or a key rotation then ends the session at once on every
 * gateway without an eviction feed of its own.
 */
export function authenticate(
  cache: KeyCache,
  policy: Exclude<KeyPolicy, "affiliate"> = "management",
  consoleSessions?: ResolveConsoleSession,
) {
  return async (request: FastifyRequest): Promise<void> => {
    request.consoleSession = false;
    const apiKey = request.headers["x-api-key"];
    const bearer = apiKey === undefined ? bearerTokenOf(request) : undefined;
    if (policy === "management" && consoleSessions && bearer?.startsWith(consoleSessionPrefix)) {
      const session = await consoleSessions(bearer);
      if (!session) throw new HttpError(401, { error: consoleAuthErrors.invalid });
      request.productId = session.productId;
      request.testMode = false;
      request.consoleSession = true;
      return;
    }
    if (apiKey === undefined || apiKey === "") throw new HttpError(401, { error: authErrors.missing });
    if (typeof apiKey !== "string" || !(apiKey.startsWith("sk_") || apiKey.startsWith("pk_"))) {
      throw new HttpError(401, { error: authErrors.format });
    }
    const resolution = await cache.resolve(apiKey);
    if (resolution.kind !== "product") throw new HttpError(401, { error: authErrors.revoked });
    const { mode } = resolution;
    if (![KeyMode.LIVE, KeyMode.TEST, KeyMode.PUBLISHABLE_LIVE, KeyMode.PUBLISHABLE_TEST].includes(mode)) {
      throw new HttpError(401, { error: authErrors.revoked });
    }
    if (isPublishable(mode) && policy !== "click") {
      throw new HttpError(403, {
        error: publishableKeyError(mode === KeyMode.PUBLISHABLE_LIVE ? "pk_live_" : "pk_test_"),
      });
    }
    if (mode === KeyMode.TEST && policy === "management") {
      throw new HttpError(403, { error: authErrors.testMode });
    }
    request.productId = resolution.productId;
    request.testMode = mode === KeyMode.TEST || mode === KeyMode.PUBLISHABLE_TEST;
  };
}
