/**
 * What every section of the dashboard is given and shares: the signed-in client, money in the
 * program's currency, how a failure is told and offered again, and how an ended token is met.
 */

import { h } from "@affiliate/browser-kit";
import type { AffiliateClient } from "@affiliate/client";
import type { Me } from "../client.js";
import { explain } from "../messages.js";

export interface DashboardContext {
  readonly client: AffiliateClient;
  /** Cents in the program's currency (known once `me` has loaded). */
  money(cents: number | bigint): string;
  /** Whether `error` means the token stopped working; the page has then gone back to sign-in. */
  signedOut(error: unknown): boolean;
}

/** A section of the page: it loads and fails on its own, in `body`, once `me` is known. */
export interface Section {
  readonly element: HTMLElement;
  /** What the section replaces as it loads: "Loading…", then its content or its failure. */
  readonly body: HTMLElement;
  load(me: Me): Promise<void>;
}

/** What went wrong and what to do, with a button that tries again. */
export function failure(error: unknown, retry: () => void): HTMLElement {
  const again = h("button", { type: "button" }, "Try again");
  again.addEventListener("click", retry);
  return h("div", { class: "failure", role: "alert" }, h("p", { class: "error" }, explain(error)), again);
}

/** A section's card, named by its heading (`id` is the heading's, for aria-labelledby). */
export function card(id: string, title: string, ...content: HTMLElement[]): HTMLElement {
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...content);
}

export function loading(text = "Loading…"): HTMLElement {
  return h("p", { class: "muted loading" }, text);
}
