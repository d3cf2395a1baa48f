/**
 * What the API answered when it refused a request, or what the client knows when no answer came.
 * Every error carries the HTTP status (none when no answer came), the envelope's `error` text and
 * `details`, and the `x-request-id` to quote to support.
 */
export class ApiError extends Error {
  override name = "ApiError";
  /** The HTTP status; undefined when no answer came (the connection was lost or timed out). */
  readonly status: number | undefined;
  /** The envelope's `error` text (or, for an answer that is not the API's envelope, what it said). */
  readonly error: string;
  /** The envelope's `details`, when it has them (a 409's `commission_id`, a validation's fields). */
  readonly details: unknown;
  /** The answer's `x-request-id`. */
  readonly requestId: string | undefined;
  /** The whole answer body as parsed. */
  readonly body: unknown;

  constructor(init: {
    status: number | undefined;
    error: string;
    details?: unknown;
    requestId?: string;
    body?: unknown;
    cause?: unknown;
  }) {
    super(
      `${init.status === undefined ? "No answer" : init.status}: ${init.error}${init.requestId ? ` (request ${init.requestId})` : ""}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.status = init.status;
    this.error = init.error;
    this.details = init.details;
    this.requestId = init.requestId;
    this.body = init.body;
  }
}

/** 400 that is not the validation envelope (a refused transition, the stats period). */
export class BadRequestError extends ApiError {
  override name = "BadRequestError";
}

/** 400 `{ error: "Validation failed", details: { formErrors, fieldErrors } }`. */
export class ValidationError extends BadRequestError {
  override name = "ValidationError";
  /** Messages about the request as a whole (an unknown field, named). */
  readonly formErrors: string[];
  /** Messages by field name. */
  readonly fieldErrors: Record<string, string[]>;

  constructor(
    init: ConstructorParameters<typeof ApiError>[0] & { formErrors: string[]; fieldErrors: Record<string, string[]> },
  ) {
    super(init);
    this.formErrors = init.formErrors;
    this.fieldErrors = init.fieldErrors;
  }
}

/** 401: no key, or an invalid or revoked one (or token). */
export class AuthenticationError extends ApiError {
  override name = "AuthenticationError";
}

/** 403: the key may not do this (a test key on the management API). */
export class PermissionDeniedError extends ApiError {
  override name = "PermissionDeniedError";
}

/** 404: no such resource in this product. */
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}

/** 409: a taken referral code, an already refunded payment, a key reused with another body or still running. */
export class ConflictError extends ApiError {
  override name = "ConflictError";
}

/** 413: the body is over 1 MiB. */
export class PayloadTooLargeError extends ApiError {
  override name = "PayloadTooLargeError";
}

/** 422: a refund amount outside what the payment allows. */
export class UnprocessableEntityError extends ApiError {
  override name = "UnprocessableEntityError";
}

/** 429, after the client's retries: the key's rate limit. */
export class RateLimitError extends ApiError {
  override name = "RateLimitError";
  /** The answer's Retry-After, in seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: ConstructorParameters<typeof ApiError>[0] & { retryAfterSeconds: number | undefined }) {
    super(init);
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** 503, after the client's retries: a service was unreachable and nothing was applied. */
export class ServiceUnavailableError extends ApiError {
  override name = "ServiceUnavailableError";
}

/** A 5xx that promises nothing: a bug behind the gateway, or something between it and you. */
export class ServerError extends ApiError {
  override name = "ServerError";
}

/**
 * The change may or may not have been applied: the gateway answered 504 (it lost the service
 * after the request left), or the connection was lost, and repeating the request was not safe.
 * Find out by repeating it with the same `idempotencyKey` when it has one, or by reading the
 * resource, before sending it again.
 */
export class UnknownOutcomeError extends ApiError {
  override name = "UnknownOutcomeError";
  /** The key the request carried: repeat with it to learn the outcome. */
  readonly idempotencyKey: string | undefined;

  constructor(init: ConstructorParameters<typeof ApiError>[0] & { idempotencyKey: string | undefined }) {
    super(init);
    this.idempotencyKey = init.idempotencyKey;
  }
}

/** A read that got no answer (after the client's retries): nothing changes by reading. */
export class ConnectionError extends ApiError {
  override name = "ConnectionError";
}

/** The envelope of a validation failure, when `body` is one. */
function validationEnvelope(
  body: unknown,
): { formErrors: string[]; fieldErrors: Record<string, string[]> } | undefined {
  const details = (body as { error?: unknown; details?: unknown } | undefined)?.details as
    | { formErrors?: unknown; fieldErrors?: unknown }
    | undefined;
  if ((body as { error?: unknown })?.error !== "Validation failed" || typeof details !== "object" || details === null) {
    return undefined;
  }
  return {
    formErrors: Array.isArray(details.formErrors) ? (details.formErrors as string[]) : [],
    fieldErrors: (typeof details.fieldErrors === "object" && details.fieldErrors !== null
      ? details.fieldErrors
      : {}) as Record<string, string[]>,
  };
}

/** The envelope's text: `error`, or `data.error` (the stats period's 400), or what the body says. */
function errorText(body: unknown, status: number): string {
  const envelope = body as { error?: unknown; data?: { error?: unknown } } | undefined;
  if (typeof envelope?.error === "string") return envelope.error;
  if (typeof envelope?.data?.error === "string") return envelope.data.error;
  if (typeof body === "string" && body.length > 0) return body.slice(0, 200);
  return `HTTP ${status}`;
}

/** The typed error of an answer with status `status` (not 2xx). */
export function errorOfAnswer(answer: {
  status: number;
  body: unknown;
  requestId: string | undefined;
  retryAfterSeconds: number | undefined;
  idempotencyKey: string | undefined;
}): ApiError {
  const { status, body, requestId } = answer;
  const init = {
    status,
    error: errorText(body, status),
    details: (body as { details?: unknown } | undefined)?.details,
    requestId,
    body,
  };
  switch (status) {
    case 400: {
      const envelope = validationEnvelope(body);
      return envelope ? new ValidationError({ ...init, ...envelope }) : new BadRequestError(init);
    }
    case 401:
      return new AuthenticationError(init);
    case 403:
      return new PermissionDeniedError(init);
    case 404:
      return new NotFoundError(init);
    case 409:
      return new ConflictError(init);
    case 413:
      return new PayloadTooLargeError(init);
    case 422:
      return new UnprocessableEntityError(init);
    case 429:
      return new RateLimitError({ ...init, retryAfterSeconds: answer.retryAfterSeconds });
    case 503:
      // The gateway's 503 always says when to come back; one without Retry-After came from
      // something else and promises nothing.
      return answer.retryAfterSeconds === undefined ? new ServerError(init) : new ServiceUnavailableError(init);
    case 504:
      return new UnknownOutcomeError({ ...init, idempotencyKey: answer.idempotencyKey });
    default:
      return status >= 500 ? new ServerError(init) : new ApiError(init);
  }
}
