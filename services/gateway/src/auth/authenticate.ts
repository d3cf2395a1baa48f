import { KeyMode } from "@affiliate/proto/partners";
import type { FastifyRequest } from "fastify";
import { HttpError } from "../errors.js";
import type { KeyCache } from "./key-cache.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The product that owns the request's API key; set by authentication. */
    productId: string;
    /** True when the key is a test-mode key (sk_test_); only the tracking endpoint accepts one. */
    testMode: boolean;
  }
}

export const authErrors = {
  missing: "Missing x-api-key header",
  format: "Invalid API key format",
  revoked: "Invalid or revoked API key",
  testMode: "Test-mode keys cannot access the management API",
} as const;

/** Who may call: the management API takes live keys only; tracking takes live and test keys. */
export type KeyPolicy = "management" | "tracking";

/**
 * Resolves `x-api-key` to the product it belongs to (spec section 5, contract section 2). On the
 * management API a test key of an existing product is 403; on tracking it selects sandbox mode.
 * The 401 answers are the same everywhere.
 */
export function authenticate(cache: KeyCache, policy: KeyPolicy = "management") {
  return async (request: FastifyRequest): Promise<void> => {
    const apiKey = request.headers["x-api-key"];
    if (apiKey === undefined || apiKey === "") throw new HttpError(401, { error: authErrors.missing });
    if (typeof apiKey !== "string" || !apiKey.startsWith("sk_")) throw new HttpError(401, { error: authErrors.format });
    const resolution = await cache.resolve(apiKey);
    if (resolution.kind === "unknown") throw new HttpError(401, { error: authErrors.revoked });
    if (resolution.mode === KeyMode.TEST && policy === "management") {
      throw new HttpError(403, { error: authErrors.testMode });
    }
    if (resolution.mode !== KeyMode.LIVE && resolution.mode !== KeyMode.TEST) {
      throw new HttpError(401, { error: authErrors.revoked });
    }
    request.productId = resolution.productId;
    request.testMode = resolution.mode === KeyMode.TEST;
  };
}
