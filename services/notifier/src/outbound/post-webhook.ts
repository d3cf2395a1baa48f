import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { guardedLookup, isPublicAddress, RefusedAddress } from "./ssrf-guard.js";

/** How long a receiver has to answer (contract 9). */
export const attemptTimeoutMs = 15_000;
/** What is read of a receiver's answer before it is dropped: the body is never stored. */
const maxResponseBytes = 16 * 1024;

/**
 * How an attempt ended, as `webhook_attempts_total` counts it: the answer's class, or why none
 * came. 1xx answers are `other`; redirects are answers (`3xx`), never followed.
 */
export const attemptOutcomes = [
  "2xx",
  "3xx",
  "4xx",
  "5xx",
  "timeout",
  "connection_refused",
  "tls",
  "ssrf_refused",
  "other",
] as const;
export type AttemptOutcome = (typeof attemptOutcomes)[number];

export interface PostResult {
  outcome: AttemptOutcome;
  /** Undefined when no answer came. */
  statusCode?: number;
  /** A receiver's Retry-After, in ms, when it sent one with 429 or 503. */
  retryAfterMs?: number;
  /** Why no answer came (timeout, refused address, connection error). */
  error?: string;
  durationMs: number;
}

function retryAfterOf(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function answerOutcome(statusCode: number): AttemptOutcome {
  const classes: Record<number, AttemptOutcome> = { 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx" };
  return classes[Math.floor(statusCode / 100)] ?? "other";
}

/** Certificate verdicts Node reports by OpenSSL's names (tls.TLSSocket's authorizationError). */
const certificateErrors = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "HOSTNAME_MISMATCH",
]);

/** Why a connection failed, from the error Node gave (its code, or OpenSSL's in the message). */
function failureOutcome(error: NodeJS.ErrnoException): AttemptOutcome {
  const code = error.code ?? "";
  if (error instanceof RefusedAddress) return "ssrf_refused";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (
    certificateErrors.has(code) ||
    code.startsWith("ERR_TLS_") ||
    code.startsWith("ERR_SSL_") ||
    (code === "EPROTO" && error.message.includes("SSL routines"))
  ) {
    return "tls";
  }
  return "other";
}

/**
 * POSTs a webhook body: every resolved address checked against the SSRF rules at connect time
 * (unless `allowPrivate`), no redirects followed (a 3xx is an answer like any other non-2xx),
 * 15 s for the whole exchange, and at most 16 KiB of the answer read and dropped.
 */
export function postWebhook(
  rawUrl: string,
  body: string,
  headers: Record<string, string>,
  options: { allowPrivate: boolean; signal?: AbortSignal; timeoutMs?: number },
): Promise<PostResult> {
  const started = Date.now();
  const done = (result: Omit<PostResult, "durationMs">): PostResult => ({
    ...result,
    durationMs: Date.now() - started,
  });
  const url = new URL(rawUrl);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // net.connect skips `lookup` for an IP literal: check it here.
  if (!options.allowPrivate && isIP(host) && !isPublicAddress(host)) {
    return Promise.resolve(
      done({ outcome: "ssrf_refused", error: new RefusedAddress(`${host} is not a public address`).message }),
    );
  }
  const timeoutMs = options.timeoutMs ?? attemptTimeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signals = [timeout];
  if (options.signal) signals.push(options.signal);
  const signal = AbortSignal.any(signals);
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    const request = client.request(
      url,
      {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
        lookup: guardedLookup(options.allowPrivate) as unknown as typeof import("node:dns").lookup,
        signal,
        agent: false,
      },
      (response) => {
        let read = 0;
        const finish = () => {
          const statusCode = response.statusCode ?? 0;
          const retryAfter =
            statusCode === 429 || statusCode === 503
              ? retryAfterOf(response.headers["retry-after"], Date.now())
              : undefined;
          resolve(
            done({
              outcome: answerOutcome(statusCode),
              statusCode,
              ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
            }),
          );
        };
        response.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > maxResponseBytes) {
            response.destroy();
            finish();
          }
        });
        response.on("end", finish);
        response.on("error", finish);
      },
    );
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (error instanceof RefusedAddress) resolve(done({ outcome: "ssrf_refused", error: error.message }));
      else if (timeout.aborted) resolve(done({ outcome: "timeout", error: `timeout after ${timeoutMs / 1000} s` }));
      else if (signal.aborted)
        resolve(
          done({
            outcome: "other",
            error: `aborted: ${signal.reason instanceof Error ? signal.reason.message : String(signal.reason)}`,
          }),
        );
      else resolve(done({ outcome: failureOutcome(error), error: error.message }));
    });
    request.end(body);
  });
}
