/**
 * What a failure means to the affiliate, and what to do about it: every error state of the page
 * says the next step, never only that something failed.
 */
import { ApiError, NetworkError } from "./api.js";

export const expiredMessage = "Your sign-in link has expired; ask for a new one.";
export const usedCodeMessage = "This sign-in link has expired or was already used; ask for a new one below.";

/** Whether the token no longer works: the page goes back to sign-in. */
export const isSignedOut = (error: unknown) => error instanceof ApiError && error.status === 401;

export function explain(error: unknown): string {
  if (error instanceof NetworkError) return "Could not reach the server. Check your connection, then try again.";
  if (!(error instanceof ApiError)) return "Something went wrong in this page. Reload it and try again.";
  switch (error.status) {
    case 401:
      return expiredMessage;
    case 404:
      return "This item is no longer available to you. Reload the page to see the current figures.";
    case 429:
      return `Too many requests. Wait ${error.retryAfterSeconds ?? 60} seconds, then try again.`;
    case 503:
      return "The service is briefly unavailable. Try again in a moment.";
    case 504:
      return "The server took too long to answer. Try again.";
    default:
      return error.status >= 500
        ? "The server could not answer. Try again in a moment; if it keeps happening, contact the program."
        : `The request was refused: ${error.message}`;
  }
}
