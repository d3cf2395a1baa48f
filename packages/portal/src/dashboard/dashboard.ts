/**
 * The signed-in page: the referral link, the period's figures and the daily chart, the
 * commissions, the payouts with their lines, and the payout details, one section (one file)
 * each. `me` loads first, since every amount is in its program's currency; then each section
 * loads and fails on its own and says what to do when it fails. A 401 anywhere means the token
 * is gone.
 */

import { fill, h, money } from "@affiliate/browser-kit";
import type { AffiliateClient } from "@affiliate/client";
import type { Me } from "../client.js";
import { isSignedOut } from "../messages.js";
import { CommissionsSection } from "./commissions-section.js";
import { LinkSection } from "./link-section.js";
import { PayoutMethodSection } from "./payout-method-section.js";
import { PayoutsSection } from "./payouts-section.js";
import { type DashboardContext, failure, loading, type Section } from "./section.js";
import { StatsSection } from "./stats-section.js";

export interface DashboardOptions {
  client: AffiliateClient;
  onSignOut: () => void;
  /** The token stopped working (expired, revoked, or the partnership ended). */
  onExpired: () => void;
}

export class Dashboard {
  readonly element: HTMLElement;
  readonly #options: DashboardOptions;
  readonly #programName = h("p", { class: "program" });
  readonly #link: LinkSection;
  readonly #sections: Section[];
  #currency = "usd";
  #expired = false;

  constructor(options: DashboardOptions) {
    this.#options = options;
    const context: DashboardContext = {
      client: options.client,
      money: (cents) => money(cents, this.#currency),
      signedOut: (error) => this.#signedOut(error),
    };
    this.#link = new LinkSection(context);
    this.#sections = [
      this.#link,
      new StatsSection(context),
      new CommissionsSection(context),
      new PayoutsSection(context),
      new PayoutMethodSection(context),
    ];
    const signOut = h("button", { type: "button", class: "quiet" }, "Sign out");
    signOut.addEventListener("click", () => options.onSignOut());

    this.element = h(
      "div",
      { class: "dashboard" },
      h("header", { class: "top" }, h("div", {}, this.#programName, h("h1", {}, "Your affiliate dashboard")), signOut),
      h("main", {}, ...this.#sections.map((section) => section.element)),
    );
  }

  /** Loads every section; `me` first, since the currency of every amount comes with it. */
  async load(): Promise<void> {
    for (const section of this.#sections) {
      fill(section.body, loading(section === this.#link ? "Loading your link…" : "Loading…"));
    }
    let me: Me;
    try {
      ({ data: me } = await this.#options.client.affiliate.me());
    } catch (error) {
      if (this.#signedOut(error)) return;
      for (const section of this.#sections) section.body.replaceChildren();
      fill(
        this.#link.body,
        failure(error, () => this.load()),
      );
      return;
    }
    this.#currency = me.program.currency;
    this.#programName.textContent = me.program.name;
    document.title = `${me.program.name} · Affiliate dashboard`;
    await Promise.all(this.#sections.map((section) => section.load(me)));
  }

  #signedOut(error: unknown): boolean {
    if (!isSignedOut(error)) return false;
    if (!this.#expired) {
      this.#expired = true;
      this.#options.onExpired();
    }
    return true;
  }
}
