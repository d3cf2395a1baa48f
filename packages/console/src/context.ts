import type { AffiliateClient } from "@affiliate/client";
import { explain, isSignedOut } from "./messages.js";
import type { StatusLine } from "./ui.js";

/** What every screen is given: the signed-in client, the program's currency, and how to fail. */
export interface ScreenContext {
  client: AffiliateClient;
  currency: string;
  programName: string;
  /** Goes to another screen (`affiliates/ptn_…`). */
  navigate(path: string): void;
  /** The session has ended: back to sign-in with the reason. */
  signedOut(): void;
}

/**
 * Runs one step of a screen (a load, an action) and says how it went on `status`: a refusal or a
 * failure in words that say what to do, and an ended session back to sign-in, never a blank page.
 * Resolves with the step's value, or undefined when it failed.
 */
export async function attempt<T>(
  context: ScreenContext,
  status: StatusLine,
  step: () => PromiseLike<T>,
  done?: string | ((value: T) => string),
): Promise<T | undefined> {
  try {
    const value = await step();
    if (done !== undefined) status.ok(typeof done === "string" ? done : done(value));
    return value;
  } catch (error) {
    if (isSignedOut(error)) {
      context.signedOut();
      return undefined;
    }
    status.error(explain(error));
    return undefined;
  }
}

export type Screen = (context: ScreenContext, rest: string[]) => HTMLElement;
