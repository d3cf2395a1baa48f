import { ApiError, ConnectionError, errorOfAnswer, ServerError, UnknownOutcomeError } from "./errors.js";
import { newIdempotencyKey, safeToRepeatByBody } from "./idempotency.js";
import { type Int64Fields, parseExact, stringifyExact } from "./json.js";
import { type Method, type OperationId, operationTable, type RequestOf, type ResultOf } from "./operations.js";
import {
  type AttemptOutcome,
  defaultRetryOptions,
  isIdempotent,
  mayRetry,
  parseRetryAfter,
  type RetryOptions,
  retryDelayMs,
} from "./retry.js";

export interface ClientOptions {
  /** The gateway's address, e.g. `https://affiliates.example.com` (paths are appended as the document writes them). */
  baseUrl: string;
  /** The product's secret key (`sk_live_…`, or `sk_test_…` for sandbox tracking): sent as `x-api-key`. */
  apiKey?: string;
  /** An affiliate's token (`apt_…`) for the affiliate API: sent as `Authorization: Bearer`. */
  token?: string;
  /**
   * A merchant console session (`cst_…`, from `client.console.sessions.open()`), sent as
   * `Authorization: Bearer` on the management API in place of `apiKey` (which wins when both are given).
   */
  consoleToken?: string;
  /** Retries (contract section 11): attempts and back-off. */
  retry?: Partial<RetryOptions>;
  /** Each attempt is given up after this long and counts as a lost connection. Default 30 s. */
  timeoutMs?: number;
  /** The fetch to use; the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Told before each retry: which attempt failed, how, and how long the client waits. */
  onRetry?: (event: RetryEvent) => void;
}

export interface RetryEvent {
  operationId: OperationId;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** Its status; undefined when the connection was lost or timed out. */
  status: number | undefined;
  delayMs: number;
  idempotencyKey: string | undefined;
}

interface Answer {
  status: number;
  body: unknown;
  requestId: string | undefined;
  retryAfterSeconds: number | undefined;
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });

/**
 * Sends the operations of the API: builds each request from the operation table, sends it with
 * the contract's retry rules, reads the answer exactly (int64 as bigint) and turns refusals into
 * typed errors. One instance per client.
 */
export class Requester {
  readonly #options: ClientOptions;
  readonly #retry: RetryOptions;
  readonly #fetch: typeof globalThis.fetch;
  readonly #baseUrl: string;

  constructor(options: ClientOptions) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required");
    this.#options = options;
    this.#retry = { ...defaultRetryOptions, ...options.retry };
    // Bound: a browser's fetch throws "Illegal invocation" when called as a method of another object.
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
  }

  /** Calls operation `id` and resolves with its answer's body, or rejects with an ApiError. */
  async call<Id extends OperationId>(id: Id, request: RequestOf<Id>): Promise<ResultOf<Id>> {
    const operation = operationTable[id];
    const { params, query, body, idempotencyKey, signal, timeoutMs, maxAttempts } = request as RequestShape;
    if (idempotencyKey !== undefined && !operation.idempotencyKey) {
      throw new TypeError(`${id} takes no Idempotency-Key: the server would not honour it`);
    }
    const bodyKey = (body as { idempotency_key?: unknown } | undefined)?.idempotency_key;
    // A key given in the body makes the request as safe as one in the header.
    const key = operation.idempotencyKey
      ? (idempotencyKey ?? (typeof bodyKey === "string" ? bodyKey : newIdempotencyKey()))
      : undefined;
    const method = operation.method as Method;
    const idempotent = isIdempotent(method, key !== undefined, safeToRepeatByBody[id]?.(body) ?? false);
    const url = this.#baseUrl + fillPath(operation.path, params) + queryString(query);
    const headers: Record<string, string> = { accept: "application/json" };
    const credential = operation.credential as "apiKey" | "bearer" | "none";
    if (credential === "apiKey" && this.#options.apiKey) headers["x-api-key"] = this.#options.apiKey;
    else if (credential === "apiKey" && this.#options.consoleToken) {
      headers.authorization = `Bearer ${this.#options.consoleToken}`;
    }
    if (credential === "bearer" && this.#options.token) headers.authorization = `Bearer ${this.#options.token}`;
    if (key !== undefined) headers["idempotency-key"] = key;
    // A file body (a payout result file, text/csv) is sent as the text it is; anything else as exact JSON.
    const textBody = "textBody" in operation ? (operation.textBody as string) : undefined;
    const payload = body === undefined ? undefined : textBody ? String(body) : stringifyExact(body);
    if (payload !== undefined) headers["content-type"] = textBody ?? "application/json";
    if ("textAnswer" in operation) headers.accept = `${operation.textAnswer as string}, application/json`;
    const int64 = operation.int64 as Readonly<Record<string, Int64Fields>>;
    const attempts = Math.max(1, maxAttempts ?? this.#retry.maxAttempts);

    for (let attempt = 1; ; attempt++) {
      let outcome: AttemptOutcome;
      let answer: Answer | undefined;
      let lostCause: unknown;
      try {
        answer = await this.#attempt(url, { method, headers, body: payload }, int64, signal, timeoutMs);
        if (answer.status >= 200 && answer.status < 300) return answer.body as ResultOf<Id>;
        outcome = {
          kind: "answer",
          status: answer.status,
          retryAfterSeconds: answer.retryAfterSeconds,
          body: answer.body,
        };
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof ApiError) throw error;
        outcome = { kind: "lost" };
        lostCause = error;
      }
      const delayMs =
        attempt < attempts && mayRetry(outcome, idempotent, key !== undefined)
          ? retryDelayMs(attempt, answer?.retryAfterSeconds, this.#retry)
          : undefined;
      if (delayMs === undefined) {
        if (answer) throw errorOfAnswer({ ...answer, idempotencyKey: key });
        throw lostConnectionError(method, key, lostCause);
      }
      this.#options.onRetry?.({ operationId: id, attempt, status: answer?.status, delayMs, idempotencyKey: key });
      await sleep(delayMs, signal);
    }
  }

  /** One attempt: the answer, read whole; throws when no whole answer came (lost, timed out). */
  async #attempt(
    url: string,
    init: { method: Method; headers: Record<string, string>; body: string | undefined },
    int64: Readonly<Record<string, Int64Fields>>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
  ): Promise<Answer> {
    const timeout = AbortSignal.timeout(timeoutMs ?? this.#options.timeoutMs ?? 30_000);
    const response = await this.#fetch(url, {
      ...init,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    // Reading the body can fail too (the connection dropped mid-answer): that is no answer.
    const text = await response.text();
    const requestId = response.headers.get("x-request-id") ?? undefined;
    return {
      status: response.status,
      body: readBody(text, response, int64[String(response.status)], requestId),
      requestId,
      retryAfterSeconds: parseRetryAfter(response.headers.get("retry-after")),
    };
  }
}

type RequestShape = {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxAttempts?: number;
};

/** The body of an answer: exact JSON when it says JSON, else its text (a proxy's page). */
function readBody(text: string, response: Response, int64: Int64Fields | undefined, requestId: string | undefined) {
  const contentType = response.headers.get("content-type") ?? "";
  // A file answer (a payout export, text/csv) is its text, empty included (PayPal's has no header).
  if (response.ok && contentType.startsWith("text/csv")) return text;
  if (text === "") return undefined;
  const json = contentType.includes("json");
  if (!json) {
    if (response.ok)
      throw new ServerError({ status: response.status, error: "The answer is not JSON", body: text, requestId });
    return text;
  }
  try {
    return parseExact(text, int64);
  } catch (cause) {
    throw new ServerError({
      status: response.status,
      error: "The answer is not valid JSON",
      body: text,
      requestId,
      cause,
    });
  }
}

/** `/api/v1/commissions/{id}` with `{ id }` filled in, each value percent-encoded. */
function fillPath(path: string, params: Record<string, string> | undefined): string {
  return path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = params?.[name];
    if (value === undefined || value === "") throw new TypeError(`Missing path parameter ${name} for ${path}`);
    return encodeURIComponent(String(value));
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    search.append(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** No answer came: a read can simply be asked again later; a change's outcome is unknown. */
function lostConnectionError(method: Method, key: string | undefined, cause: unknown): ApiError {
  const reason = cause instanceof Error && cause.name === "TimeoutError" ? "timed out" : "lost the connection";
  if (method === "GET") return new ConnectionError({ status: undefined, error: `The request ${reason}`, cause });
  return new UnknownOutcomeError({
    status: undefined,
    error: `The request ${reason} before an answer came: it may or may not have been applied. ${
      key ? "Repeat it with the same idempotencyKey to learn the outcome" : "Read the resource before sending it again"
    }`,
    idempotencyKey: key,
    cause,
  });
}
