// The client side of the RPC between services: balanced transports, deadlines and honest failures.
// Serving RPCs is rpc-server.ts.
import {
  type CallOptions,
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type BalancedTransport, balancedTransport } from "./balanced-transport.js";
import { commitReserveMs, currentDeadline, Deadline } from "./deadline.js";
import { DomainError, isOutcomeUnknown, toConnectError } from "./errors.js";
import { GuardedHttp2SessionManager } from "./http2-sessions.js";
import { clientMetrics } from "./metrics.js";
import { clientTracing } from "./tracing.js";

export interface RpcTransportOptions {
  /**
   * The deadline sent with a call made outside any RPC (a gateway request, a job, the CLI). A
   * call made while serving an RPC sends what is left of that RPC's deadline instead.
   */
  timeoutMs?: number;
  /**
   * How much longer than the deadline it sent the caller waits for the answer. The service
   * answers by its deadline (it rolls back what it cannot commit in time), so with this margin
   * the caller nearly always learns the real outcome; a call still unanswered after it has an
   * unknown outcome.
   */
  graceMs?: number;
  /** Resolves the service's name to its addresses (DNS by default; tests give their own). */
  resolve?: (host: string) => Promise<string[]>;
}

/**
 * A client transport to another service: the Connect protocol with binary payloads over HTTP/2
 * (measured on this stack: ~2.0k trivial calls/s through a Fastify route, against ~1.3k with the
 * gRPC protocol), trace context and metrics on every call. `baseUrl` is one URL, or several
 * separated by commas. Calls are balanced one by one over every address they name (a name
 * resolves to a headless Service's ready pods), one multiplexed session each, and a call that
 * an address never processed (it was draining, or gone) is sent once more, elsewhere when there
 * is an elsewhere (see balancedTransport); metrics and spans count each attempt. Uncompressed:
 * services talk inside one cluster, where gzipping every answer over 1 KB (connect-node's
 * default) cost more CPU on both sides than the bytes saved (a 12-month time series spent a
 * tenth of its time in zlib).
 *
 * Every call carries a deadline and fails truthfully (see deadlinesAndTransportFailures): what
 * callers see is the service's own answer, UNAVAILABLE when nothing was processed (a blind retry
 * is safe), or UNKNOWN with the reason "outcome_unknown" when the request may have landed.
 */
export function createRpcTransport(baseUrl: string, options: RpcTransportOptions = {}): BalancedTransport {
  return balancedTransport(baseUrl, {
    ...(options.resolve ? { resolve: options.resolve } : {}),
    notProcessed: (error) => transportFailureOf(error) === "not_processed",
    connect(url) {
      const sessionManager = new GuardedHttp2SessionManager(url, { pingIntervalMs: 15_000 });
      const transport = createConnectTransport({
        baseUrl: url,
        httpVersion: "2",
        useBinaryFormat: true,
        // No defaultTimeoutMs: the deadline interceptor sends and enforces it (see callTimeout).
        interceptors: rpcClientInterceptors(options),
        acceptCompression: [],
        sessionManager,
      });
      return { transport, close: () => sessionManager.abort() };
    },
  });
}

/**
 * The client interceptors of createRpcTransport (metrics, tracing, deadlines, honest failures), for a
 * transport built another way, such as a test's in-memory router transport.
 */
export function rpcClientInterceptors(options: RpcTransportOptions = {}): Interceptor[] {
  // Metrics outermost: they count the code the caller gets, after failures are classified.
  return [
    clientMetrics,
    clientTracing,
    deadlinesAndTransportFailures({ timeoutMs: options.timeoutMs ?? 5000, graceMs: options.graceMs ?? 1000 }),
  ];
}

const callTimeoutKey = createContextKey<number | undefined>(undefined, { description: "deadline of one call" });

/**
 * Call options giving one call made outside any RPC its own deadline, for work in proportion to
 * the data rather than a lookup (`payouts.generatePayouts(req, callTimeout(600_000))`). Connect's
 * own `timeoutMs` option must not be used for a change: on expiry it reports DEADLINE_EXCEEDED
 * ("nothing was applied") for a request that may well have been. (A probe, which changes
 * nothing, may use it.)
 */
export function callTimeout(ms: number): CallOptions {
  return { contextValues: createContextValues().set(callTimeoutKey, ms) };
}

/**
 * Runs a call that changes nothing (a lookup, an authentication): wherever such a call got to,
 * nothing was applied, so an unknown outcome is just UNAVAILABLE (the 503 that says "retry").
 * Without it a frozen service would turn a read into the 504 of a change that may have landed.
 */
export async function asRead<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof ConnectError && isOutcomeUnknown(error)) {
      throw new ConnectError(error.rawMessage.replace(/; the request may have been applied$/, ""), Code.Unavailable);
    }
    throw error;
  }
}

/** What a failure that is not the service's own answer says about the request. */
export type TransportFailure =
  /** The service never processed it (refused stream, GOAWAY, connection refused): retry safely. */
  | "not_processed"
  /** It may have been processed (connection reset or lost after it left, no answer in time). */
  | "outcome_unknown";

/** Node's codes for a request that never reached the service. */
const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ERR_HTTP2_GOAWAY_SESSION"]);

/**
 * Classifies a failed call: undefined when the error is the service's own answer (it carries
 * no Node error), otherwise whether the request can have been processed. HTTP/2 promises that a
 * stream refused (REFUSED_STREAM, or above a GOAWAY's last stream id) was not processed.
 */
export function transportFailureOf(error: unknown): TransportFailure | undefined {
  const chain: Error[] = [];
  for (let cause = error; cause instanceof Error && !chain.includes(cause); cause = cause.cause) chain.push(cause);
  const codes = chain.map((e) => (e as { code?: unknown }).code).filter((c): c is string => typeof c === "string");
  const messages = chain.map((e) => e.message);
  if (
    codes.some((code) => notSentCodes.has(code)) ||
    messages.some((m) => m.includes("REFUSED_STREAM") || m.includes("received GOAWAY without any open streams"))
  ) {
    return "not_processed";
  }
  if (
    codes.length > 0 ||
    messages.some((m) => m.includes("http/2 stream closed with error code") || m.includes("PING timed out"))
  ) {
    return "outcome_unknown";
  }
  return undefined;
}

const callDeadlineKey = createContextKey<Deadline | undefined>(undefined, {
  description: "deadline of a call made outside any RPC, kept across its attempts",
});

/**
 * The client side of deadlines and honest failures, for every attempt of a call:
 * - it sends the deadline (`connect-timeout-ms`): the caller's own when it serves an RPC (less
 *   commitReserveMs, so the caller can still commit after the answer), `timeoutMs` otherwise
 *   (fixed at the first attempt: a second attempt has what is left);
 * - it waits that long plus `graceMs` (or, inside an RPC, until the caller's own deadline);
 * - a request the service never processed is answered UNAVAILABLE, carrying the transport's
 *   error as its cause: the balanced transport sends it once more, elsewhere if it can (connect-
 *   node opens a fresh connection when the old session is going away);
 * - a request that may have landed (reset, connection lost, no answer in time) is answered
 *   UNKNOWN "outcome_unknown", never retried: only the caller can decide how to find out (a
 *   caller that made a read knows nothing changed: see asRead).
 */
function deadlinesAndTransportFailures(options: { timeoutMs: number; graceMs: number }): Interceptor {
  return (next) => async (req) => {
    const inherited = currentDeadline();
    let deadline = inherited ?? req.contextValues.get(callDeadlineKey);
    if (!deadline) {
      deadline = Deadline.in(req.contextValues.get(callTimeoutKey) ?? options.timeoutMs);
      req.contextValues.set(callDeadlineKey, deadline);
    }
    const reserveMs = inherited ? commitReserveMs : 0;
    const waitUntil = inherited ? inherited.at : deadline.at + options.graceMs;
    const target = `${req.service.name}.${req.method.name}`;
    const sendMs = Math.floor(deadline.remainingMs() - reserveMs);
    if (sendMs <= 0) throw toConnectError(DomainError.deadlineExceeded());
    req.header.set("connect-timeout-ms", String(sendMs));
    const abandon = new AbortController();
    const timer = setTimeout(() => abandon.abort(), Math.max(0, waitUntil - Date.now()));
    try {
      return await next({ ...req, signal: AbortSignal.any([req.signal, abandon.signal]) });
    } catch (error) {
      if (abandon.signal.aborted) {
        throw toConnectError(
          DomainError.outcomeUnknown(`No answer from ${target} in time; the request may have been applied`),
        );
      }
      if (req.signal.aborted) throw error;
      const failure = transportFailureOf(error);
      if (failure === undefined) throw error;
      if (failure === "outcome_unknown") {
        throw toConnectError(
          DomainError.outcomeUnknown(`The connection to ${target} was lost; the request may have been applied`),
        );
      }
      throw new ConnectError(`${target} is unavailable`, Code.Unavailable, undefined, undefined, error);
    } finally {
      clearTimeout(timer);
    }
  };
}
