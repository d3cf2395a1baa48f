import type { Method } from "./operations.js";

/** How the client retries (contract section 11). */
export interface RetryOptions {
  /** Attempts in all, the first included; 1 turns retries off. Default 4. */
  maxAttempts: number;
  /** The back-off before the first retry, doubled for each next one (with full jitter). Default 500 ms. */
  baseDelayMs: number;
  /** No wait is longer: a Retry-After beyond it ends the retries. Default 20 s. */
  maxDelayMs: number;
}

export const defaultRetryOptions: RetryOptions = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 20_000 };

/** What one attempt came to, as far as retrying is concerned. */
export type AttemptOutcome =
  | { kind: "answer"; status: number; retryAfterSeconds: number | undefined; body: unknown }
  | { kind: "lost" };

/**
 * Whether repeating the request can apply it twice: never for a read, a PUT or a DELETE (they
 * converge), a request with an Idempotency-Key (the server answers a repeat from its record), or
 * one the operation's own rule says is safe (a payment with its `external_id`).
 */
export function isIdempotent(method: Method, hasIdempotencyKey: boolean, safeByBody: boolean): boolean {
  return method === "GET" || method === "PUT" || method === "DELETE" || hasIdempotencyKey || safeByBody;
}

/**
 * Whether the outcome of an attempt may be retried (contract section 11):
 * - 429, and 503 with Retry-After: nothing was applied, whatever the request;
 * - 504, a 502 or 503 that promises nothing, a lost connection or a timeout: the outcome is
 *   unknown, so only an idempotent request is repeated;
 * - 409 "idempotency key in progress": the first request with this key is still running; the key
 *   makes the repeat safe, and it answers with that request's stored outcome once it is done.
 * Anything else is the answer.
 */
export function mayRetry(outcome: AttemptOutcome, idempotent: boolean, hasIdempotencyKey: boolean): boolean {
  if (outcome.kind === "lost") return idempotent;
  const { status, retryAfterSeconds } = outcome;
  if (status === 429) return true;
  if (status === 503 && retryAfterSeconds !== undefined) return true;
  if (status === 502 || status === 503 || status === 504) return idempotent;
  if (status === 409 && hasIdempotencyKey) return isKeyInProgress(outcome.body);
  return false;
}

function isKeyInProgress(body: unknown): boolean {
  const details = (body as { details?: { reason?: unknown } } | undefined)?.details;
  return details?.reason === "idempotency_key_in_progress";
}

/**
 * The wait before retry number `retry` (1 for the first): exponential back-off with full jitter
 * (`random` in [0, 1)), never shorter than the answer's Retry-After; undefined when Retry-After
 * asks for more than `maxDelayMs` (the caller decides then, not a sleeping client).
 */
export function retryDelayMs(
  retry: number,
  retryAfterSeconds: number | undefined,
  options: RetryOptions,
  random: () => number = Math.random,
): number | undefined {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (retry - 1));
  const jittered = Math.floor(random() * ceiling);
  if (retryAfterSeconds === undefined) return jittered;
  const floor = retryAfterSeconds * 1000;
  if (floor > options.maxDelayMs) return undefined;
  // Jitter on top of the floor spreads the clients that were all told the same second.
  return Math.min(options.maxDelayMs, floor + Math.floor(random() * Math.min(floor, options.baseDelayMs)));
}

/** Retry-After in seconds (the delta form; an HTTP date is read as its distance from now). */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
