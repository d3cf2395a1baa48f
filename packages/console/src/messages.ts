/**
 * What a failure means to the merchant and what to do about it: every error state of the console
 * says the next step, never only that something failed. Errors are the client's typed classes.
 */
import {
  ApiError,
  AuthenticationError,
  ConnectionError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  UnknownOutcomeError,
  ValidationError,
} from "@affiliate/client";

export const expiredMessage =
  "Your console session has ended (it expired, you signed out elsewhere, or the keys were rotated). Sign in again with your secret key.";

/** Whether the session no longer works: the console goes back to sign-in. */
export const isSignedOut = (error: unknown) => error instanceof AuthenticationError;

export function explain(error: unknown): string {
  if (error instanceof ValidationError) {
    const fields = Object.entries(error.fieldErrors ?? {}).map(
      ([field, messages]) => `${field}: ${messages?.join(", ")}`,
    );
    const all = [...(error.formErrors ?? []), ...fields];
    return `Not accepted: ${all.length > 0 ? all.join("; ") : error.error}`;
  }
  if (error instanceof UnknownOutcomeError) {
    return "The server did not confirm this change; it may or may not have been applied. Reload this screen before trying again.";
  }
  if (error instanceof ConnectionError) return "Could not reach the server. Check your connection, then try again.";
  if (error instanceof RateLimitError) {
    return `Too many requests. Wait ${error.retryAfterSeconds ?? 60} seconds, then try again.`;
  }
  if (error instanceof ServiceUnavailableError)
    return "The service is briefly unavailable; nothing was changed. Try again in a moment.";
  if (error instanceof AuthenticationError) return expiredMessage;
  if (error instanceof PermissionDeniedError) return `Not allowed: ${error.error}`;
  if (error instanceof ApiError) {
    if (error.status !== undefined && error.status >= 500) {
      return `The server could not answer (${error.status}). Try again in a moment${error.requestId ? `; request id ${error.requestId}` : ""}.`;
    }
    return error.error;
  }
  return "Something went wrong in this page. Reload it and try again.";
}
