import { ErrorInfoSchema, FieldViolationsSchema, type Status, StatusSchema } from "@affiliate/proto/common";
import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

/** What went wrong, in the vocabulary every service shares. */
export type DomainErrorKind =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "out_of_range"
  | "unauthenticated"
  | "permission_denied"
  | "aborted"
  | "unavailable"
  /** The caller's deadline passed before the change could commit: nothing was applied. */
  | "deadline_exceeded"
  /** The change may or may not have been applied (a commit or a call was cut short). */
  | "outcome_unknown";

/** Field name to messages, as in the public validation envelope. */
export type FieldErrors = Record<string, string[]>;

/**
 * An expected failure of a use case: the domain throws it, the RPC edge turns it into a
 * ConnectError with the matching code, and the gateway turns that into the spec's status and
 * envelope. Anything else thrown is a bug and is answered as INTERNAL with a generic message.
 */
export class DomainError extends Error {
  override readonly name = "DomainError";
  /** A stable, machine-readable reason (e.g. "ambiguous_payment"), travelling as ErrorInfo. */
  reason?: string;
  /** Public details for the merchant (e.g. { commission_id }), travelling as ErrorInfo. */
  details?: JsonObject;

  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly fieldErrors: FieldErrors = {},
    readonly formErrors: string[] = [],
  ) {
    super(message);
  }

  /** An error with a reason and public details, e.g. a 409 naming the commission. */
  static withInfo(kind: DomainErrorKind, message: string, info: { reason: string; details?: JsonObject }): DomainError {
    const error = new DomainError(kind, message);
    error.reason = info.reason;
    error.details = info.details ?? {};
    return error;
  }

  /** The deadline passed before anything was applied; a retry is safe. */
  static deadlineExceeded(): DomainError {
    return new DomainError(
      "deadline_exceeded",
      "The request's deadline passed before it could be applied; nothing was applied",
    );
  }

  /** Whether the change was applied cannot be known; the caller must find out before retrying blindly. */
  static outcomeUnknown(message: string): DomainError {
    return DomainError.withInfo("outcome_unknown", message, { reason: outcomeUnknownReason });
  }

  /** An INVALID_ARGUMENT naming the offending field, shown as a validation envelope. */
  static invalidField(field: string, message: string): DomainError {
    return new DomainError("invalid_argument", message, { [field]: [message] });
  }
}

const codeOf: Record<DomainErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  out_of_range: Code.OutOfRange,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  aborted: Code.Aborted,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
  outcome_unknown: Code.Unknown,
};

/**
 * The ErrorInfo reason of an error whose outcome is unknown: it travels as UNKNOWN with this
 * reason through every hop, and the gateway answers it 504 (contract section 11).
 */
export const outcomeUnknownReason = "outcome_unknown";

/** Whether a call failed in a way that leaves its effect unknown (see outcomeUnknownReason). */
export function isOutcomeUnknown(error: ConnectError): boolean {
  return error.code === Code.Unknown && errorInfoOf(error)?.reason === outcomeUnknownReason;
}

type OutgoingDetails = NonNullable<ConstructorParameters<typeof ConnectError>[3]>;

/** The FieldViolations and ErrorInfo a DomainError carries, when it has them. */
function detailsOf(error: DomainError) {
  const violations = Object.entries(error.fieldErrors).flatMap(([field, messages]) =>
    messages.map((description) => ({ field, description })),
  );
  return {
    fieldViolations:
      violations.length > 0 || error.formErrors.length > 0
        ? create(FieldViolationsSchema, { fieldViolations: violations, formErrors: error.formErrors })
        : undefined,
    errorInfo:
      error.reason !== undefined
        ? create(ErrorInfoSchema, { reason: error.reason, details: error.details ?? {} })
        : undefined,
  };
}

/**
 * The ConnectError a DomainError travels as: field errors ride as a FieldViolations detail, a
 * reason with public details as an ErrorInfo detail.
 */
export function toConnectError(error: DomainError): ConnectError {
  return connectErrorOfStatus(toStatus(error));
}

/**
 * A DomainError as a Status message: the outcome of one item of a batch whose items fail alone.
 * `connectErrorOfStatus` turns it back into exactly the error `toConnectError` makes.
 */
export function toStatus(error: DomainError): Status {
  return create(StatusSchema, { code: codeOf[error.kind], message: error.message, ...detailsOf(error) });
}

/** The ConnectError an item's Status stands for: the one its own call would have failed with. */
export function connectErrorOfStatus(status: Status): ConnectError {
  const details: OutgoingDetails = [];
  if (status.fieldViolations) details.push({ desc: FieldViolationsSchema, value: status.fieldViolations });
  if (status.errorInfo) details.push({ desc: ErrorInfoSchema, value: status.errorInfo });
  return new ConnectError(status.message, status.code as Code, undefined, details);
}

/** The reason and public details carried by a ConnectError, or undefined when it has none. */
export function errorInfoOf(error: ConnectError): { reason: string; details: JsonObject } | undefined {
  const [info] = error.findDetails(ErrorInfoSchema);
  return info ? { reason: info.reason, details: info.details ?? {} } : undefined;
}

/** The field errors carried by a ConnectError, or undefined when it has none. */
export function fieldErrorsOf(error: ConnectError): { fieldErrors: FieldErrors; formErrors: string[] } | undefined {
  const [detail] = error.findDetails(FieldViolationsSchema);
  if (!detail) return undefined;
  const fieldErrors: FieldErrors = {};
  for (const { field, description } of detail.fieldViolations) {
    fieldErrors[field] = [...(fieldErrors[field] ?? []), description];
  }
  return { fieldErrors, formErrors: [...detail.formErrors] };
}
