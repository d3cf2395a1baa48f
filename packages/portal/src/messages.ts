/**
 * What a failure means to the affiliate, and what to do about it: every error state of the page
 * says the next step, never only that something failed. Errors are the client's typed classes,
 * met after its retries.
 */
import {
  ApiError,
  AuthenticationError,
  ConnectionError,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
  UnknownOutcomeError,
} from "@affiliate/client";

export const expiredMessage = "Your sign-in link has expired; ask for a new one.";
export const usedCodeMessage = "This sign-in link has expired or was already used; ask for a new one below.";

/** Whether the token no longer works: the page goes back to sign-in. */
export const isSignedOut = (error: unknown) => error instanceof AuthenticationError;

export function explain(error: unknown): string {
  // No answer came: after the client's retries for a read, at once for a change it may not repeat.
  const unanswered = error instanceof ConnectionError || (error instanceof UnknownOutcomeError && !error.status);
  if (unanswered) return "Could not reach the server. Check your connection, then try again.";
  if (error instanceof UnknownOutcomeError) return "The server took too long to answer. Try again.";
  if (!(error instanceof ApiError)) return "Something went wrong in this page. Reload it and try again.";
  if (error instanceof AuthenticationError) return expiredMessage;
  if (error instanceof NotFoundError) {
    return "This item is no longer available to you. Reload the page to see the current figures.";
  }
  if (error instanceof RateLimitError) {
    return `Too many requests. Wait ${error.retryAfterSeconds ?? 60} seconds, then try again.`;
  }
  if (error instanceof ServiceUnavailableError) return "The service is briefly unavailable. Try again in a moment.";
  if (error.status !== undefined && error.status >= 500) {
    return "The server could not answer. Try again in a moment; if it keeps happening, contact the program.";
  }
  return `The request was refused: ${error.error}`;
}
