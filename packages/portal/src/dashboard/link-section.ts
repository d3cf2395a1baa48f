/**
 * The referral link (or, when the program has no link template, the code) with a copy button,
 * and the program's hold and payout minimum.
 */
import { fill, h } from "@affiliate/browser-kit";
import type { Me } from "../client.js";
import type { DashboardContext, Section } from "./section.js";

export class LinkSection implements Section {
  readonly body: HTMLElement = h("section", { class: "card", "aria-labelledby": "link-title" });
  readonly element = this.body;
  readonly #context: DashboardContext;

  constructor(context: DashboardContext) {
    this.#context = context;
  }

  async load(me: Me): Promise<void> {
    const shared = me.referral_link ?? me.referral_code;
    const what = me.referral_link ? "link" : "code";
    const field = h("input", {
      id: "referral-link",
      class: "link-field",
      readonly: true,
      value: shared,
      "aria-label": `Your referral ${what}`,
    });
    field.addEventListener("focus", () => field.select());
    const status = h("p", { class: "copy-status", role: "status", "aria-live": "polite" });
    const copy = h("button", { type: "button", class: "primary", "aria-label": `Copy your referral ${what}` }, "Copy");
    copy.addEventListener("click", async () => {
      const copied = await copyText(shared, field);
      status.textContent = copied
        ? `Copied your referral ${what} to the clipboard.`
        : `Could not copy: select the ${what} and copy it yourself.`;
    });
    const { hold_days: holdDays, payout_minimum_cents: minimum } = me.program;
    fill(
      this.body,
      h("h2", { id: "link-title" }, `Your referral ${what}`),
      h("div", { class: "copy-row" }, field, copy),
      status,
      h(
        "p",
        { class: "muted" },
        `Code ${me.referral_code}. Commissions are held ${holdDays} ${holdDays === 1 ? "day" : "days"} before they can be paid`,
        minimum > 0 ? `; payouts start at ${this.#context.money(minimum)}.` : ".",
      ),
    );
  }
}

/**
 * The clipboard API where the page may use it; otherwise the old way, selecting the field and
 * asking the browser to copy the selection.
 */
async function copyText(text: string, field: HTMLInputElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    field.focus();
    field.select();
    try {
      return document.execCommand("copy");
    } catch {
      return false;
    }
  }
}
