import { isCleanText } from "@affiliate/contract-rules";
import { connectErrorOfStatus, errorInfoOf, fieldErrorsOf, isOutcomeUnknown } from "@affiliate/platform";
import type { Status } from "@affiliate/proto/common";
import type { ErrorBody, NestedErrorBody, ValidationErrorBody } from "@affiliate/rest-shapes/schemas/common";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { safeParseStrict } from "./http/strict-input.js";

/** Every error body the gateway sends; the nested one only for an invalid stats period. */
export type HttpErrorBody = ErrorBody | ValidationErrorBody | NestedErrorBody;

/** An answer decided by the gateway itself: the status, the body and any extra headers. */
export class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly statusCode: number,
    readonly body: HttpErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super("data" in body ? body.data.error : body.error);
  }

  static validation(details: ValidationErrorBody["details"]): HttpError {
    return new HttpError(400, { error: "Validation failed", details });
  }
}

function dataOrThrow<T>(parsed: z.ZodSafeParseResult<T>): T {
  // flattenError lists only fields that have messages, so none of them is undefined.
  if (!parsed.success) throw HttpError.validation(z.flattenError(parsed.error) as ValidationErrorBody["details"]);
  return parsed.data;
}

/**
 * Parses `input` with `schema` or throws the spec's validation envelope. Unknown names are not
 * its concern: a declared route refuses them for its whole input (http/define-route.ts).
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  return dataOrThrow(schema.safeParse(input));
}

/**
 * parseOrThrow refusing unknown fields too, for a part of a body its route checks by itself (an
 * event of a batch, which fails alone).
 */
export function parseStrictOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  return dataOrThrow(safeParseStrict(schema, input));
}

/** The resources a path names by id, as their owners word an unknown one. */
export type PathResource = "Affiliate" | "Commission" | "Payout" | "Webhook" | "Delivery" | "Erasure" | "Stripe event";

/**
 * The ids in a request's path, parsed with `schema`. An id with bad text (U+0000, an unpaired
 * surrogate) names nothing that can exist, so it is the 404 of an unknown id (contract section
 * 11), worded as the owning service words it: `<resource> <id> not found`. Any other problem
 * (an id over 128 characters) is the validation envelope.
 */
export function pathParamsOrThrow<T extends Record<string, string>>(
  schema: z.ZodType<T>,
  params: unknown,
  resources: { [Param in keyof T]?: PathResource },
): T {
  for (const [param, resource] of Object.entries(resources)) {
    const id = (params as Record<string, unknown> | undefined)?.[param];
    if (typeof id === "string" && !isCleanText(id)) throw new HttpError(404, { error: `${resource} ${id} not found` });
  }
  return parseOrThrow(schema, params);
}

/** Thrown by the rate limiters; answered 429 with `retryAfterSeconds` as Retry-After. */
export class RateLimitedError extends Error {
  override readonly name = "RateLimitedError";
  readonly statusCode = 429;
  constructor(readonly retryAfterSeconds: number) {
    super(`Rate limit exceeded, retry in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? "" : "s"}`);
  }
}

export const unavailableMessage = "Service temporarily unavailable";
/**
 * ErrorInfo reasons of an UNAVAILABLE that means "recorded, finishing in the background": its
 * message and details (the id to follow) are shown, with Retry-After.
 */
const acceptedInBackground = new Set(["erasure_running"]);

/** Seconds a client should wait when a service behind the gateway is unreachable. */
export const unavailableRetryAfterSeconds = 1;

/**
 * The 504 answer when a change may or may not have been applied (contract section 11): the
 * connection to the service was lost after the request left, or no answer came in time. No
 * Retry-After: a blind retry could apply the change twice.
 */
export const outcomeUnknownMessage =
  "The outcome of the request is unknown: it may or may not have been applied. Repeat it with the same Idempotency-Key to learn the outcome, or read the resource before retrying";

/**
 * HTTP status of each Connect code a service can answer with. A 503 promises nothing was
 * applied: services answer UNAVAILABLE and DEADLINE_EXCEEDED only then, and the RPC client turns
 * every transport failure into UNAVAILABLE (not processed) or an unknown outcome (504). Codes not listed (Internal,
 * Unknown, DataLoss, Unimplemented, ...) are bugs or mismatched deployments: 500 with a generic
 * message, logged with the cause.
 */
export const httpStatusOfCode: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.FailedPrecondition]: 400,
  // Only a refund amount outside what the payment allows (spec 4.9, 7) uses it.
  [Code.OutOfRange]: 422,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  [Code.ResourceExhausted]: 503,
  [Code.Unavailable]: 503,
  [Code.DeadlineExceeded]: 503,
  [Code.Canceled]: 503,
};

export const outcomeUnknownStatus = 504;

/**
 * The answer for an error a service returned over RPC. A FieldViolations detail on
 * INVALID_ARGUMENT is the validation envelope; an ErrorInfo detail puts its public details beside
 * the service's message (`{ error, details }`, details left out when empty); otherwise the body
 * is the service's message alone.
 */
export function httpErrorOfConnect(error: ConnectError): HttpError | undefined {
  if (isOutcomeUnknown(error)) return new HttpError(outcomeUnknownStatus, { error: outcomeUnknownMessage });
  const status = httpStatusOfCode[error.code];
  if (status === undefined) return undefined;
  if (status === 503) {
    const retryAfter = { "retry-after": String(unavailableRetryAfterSeconds) };
    // A service that recorded the work and finishes it in the background (an erasure past its
    // deadline) says so with a reason listed here; any other 503 stays generic, leaking nothing.
    const accepted = error.code === Code.Unavailable ? errorInfoOf(error) : undefined;
    if (accepted && acceptedInBackground.has(accepted.reason)) {
      return new HttpError(503, { error: error.rawMessage, details: accepted.details }, retryAfter);
    }
    return new HttpError(503, { error: unavailableMessage }, retryAfter);
  }
  if (error.code === Code.Unauthenticated) return new HttpError(401, { error: "Invalid or revoked API key" });
  if (error.code === Code.InvalidArgument) {
    const violations = fieldErrorsOf(error);
    if (violations) return HttpError.validation(violations);
  }
  const details = errorInfoOf(error)?.details;
  if (details && Object.keys(details).length > 0) return new HttpError(status, { error: error.rawMessage, details });
  return new HttpError(status, { error: error.rawMessage });
}

/**
 * The answer for one item of a batch that failed (e.g. an event of POST /events/batch): exactly
 * what its own request would have been answered. A code with no status here is a bug: 500.
 */
export function httpErrorOfItem(status: Status | undefined): HttpError {
  return (
    (status && httpErrorOfConnect(connectErrorOfStatus(status))) ??
    new HttpError(500, { error: "Internal server error" })
  );
}

/** Fastify's own request errors, with texts a client can act on. */
const fastifyErrorTexts: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "Malformed JSON in request body",
  FST_ERR_CTP_EMPTY_JSON_BODY: "Request body is empty but content-type is application/json",
  FST_ERR_CTP_BODY_TOO_LARGE: "Request body is larger than 1 MiB",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "Unsupported content type; send application/json",
};

function isFastifyClientError(error: unknown): error is FastifyError & { statusCode: number } {
  const { code, statusCode } = error as Partial<FastifyError>;
  return (
    typeof code === "string" &&
    code.startsWith("FST_") &&
    typeof statusCode === "number" &&
    statusCode >= 400 &&
    statusCode < 500
  );
}

/** A GET or HEAD changes nothing: a call it made that was lost is a 503, not an unknown outcome. */
function isRead(request: FastifyRequest): boolean {
  return request.method === "GET" || request.method === "HEAD";
}

function toHttpError(error: unknown, request: FastifyRequest): HttpError | undefined {
  if (error instanceof HttpError) return error;
  // An id whose percent-encoding does not decode to UTF-8 text is an id no resource has.
  if ((error as Partial<FastifyError>).code === "FST_ERR_BAD_URL") return new HttpError(404, { error: "Not found" });
  if (error instanceof RateLimitedError) {
    return new HttpError(429, { error: error.message }, { "retry-after": String(error.retryAfterSeconds) });
  }
  if (error instanceof ConnectError && isRead(request) && isOutcomeUnknown(error)) {
    return httpErrorOfConnect(new ConnectError(error.rawMessage, Code.Unavailable));
  }
  if (error instanceof ConnectError) return httpErrorOfConnect(error);
  if (isFastifyClientError(error)) {
    return new HttpError(error.statusCode, { error: fastifyErrorTexts[error.code] ?? error.message });
  }
  return undefined;
}

/**
 * The one place errors become answers: every status and envelope the gateway sends on failure
 * is decided here. Unknown errors are logged with their cause and answered without details.
 */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = toHttpError(error, request);
  if (!answer) {
    request.log.error({ err: error }, "unhandled error");
    return reply.code(500).send({ error: "Internal server error" });
  }
  if (answer.statusCode === 503) request.log.warn({ err: error }, "dependency unavailable");
  if (answer.statusCode === outcomeUnknownStatus) request.log.warn({ err: error }, "outcome of a call unknown");
  return reply.code(answer.statusCode).headers(answer.headers).send(answer.body);
}
