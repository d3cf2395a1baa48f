import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { guardedLookup, isPublicAddress, RefusedAddress } from "./ssrf-guard.js";

/** How long a receiver has to answer (contract 9). */
export const attemptTimeoutMs = 15_000;
/** What is read of a receiver's answer before it is dropped: the body is never stored. */
const maxResponseBytes = 16 * 1024;

export interface PostResult {
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
    return Promise.resolve(done({ error: new RefusedAddress(`${host} is not a public address`).message }));
  }
  const timeoutMs = options.timeoutMs ?? attemptTimeoutMs;
  const signals = [AbortSignal.timeout(timeoutMs)];
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
          resolve(done({ statusCode, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) }));
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
    request.on("error", (error: Error) => {
      const reason =
        signal.aborted && !(error instanceof RefusedAddress) ? `no answer within ${timeoutMs / 1000} s` : error.message;
      resolve(done({ error: reason }));
    });
    request.end(body);
  });
}
