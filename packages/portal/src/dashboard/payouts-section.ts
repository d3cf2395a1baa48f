/**
 * The payouts, page by page, newest first: each opens to its lines (the commissions it pays and
 * the clawbacks of refunds after a payout), which the list already carries.
 */
import { formatDate, h, label } from "@affiliate/browser-kit";
import type { Me, Payout } from "../client.js";
import { loadPagedList } from "./paged-list.js";
import { card, type DashboardContext, type Section } from "./section.js";

/** A payout's status in the affiliate's words: a completed payout is one they were paid. */
const statusText = (status: Payout["status"]) => (status === "completed" ? "Paid" : label(status));

export class PayoutsSection implements Section {
  readonly body = h("div");
  readonly element = card("payouts-title", "Payouts", this.body);
  readonly #context: DashboardContext;

  constructor(context: DashboardContext) {
    this.#context = context;
  }

  load(me: Me): Promise<void> {
    const { client, money } = this.#context;
    const minimum = me.program.payout_minimum_cents;
    return loadPagedList<Payout>({
      context: this.#context,
      body: this.body,
      fetchPage: (cursor) => client.affiliate.payouts.list({ limit: 20, cursor }),
      item: (payout) => this.#item(payout),
      listClass: "payouts",
      listLabel: "Payouts, newest first",
      moreLabel: "Show older payouts",
      empty:
        "No payouts yet. Commissions are paid out once their hold has passed" +
        (minimum > 0 ? ` and they add up to at least ${money(minimum)}.` : "."),
    });
  }

  #item(payout: Payout): HTMLElement {
    const money = this.#context.money;
    const panelId = `payout-${payout.id}`;
    const when = payout.paid_at ? `paid ${formatDate(payout.paid_at)}` : `created ${formatDate(payout.created_at)}`;
    const toggle = h(
      "button",
      {
        type: "button",
        class: "payout-toggle",
        "aria-expanded": "false",
        "aria-controls": panelId,
        "aria-label": `Payout of ${money(payout.amount_cents)}, ${statusText(payout.status).toLowerCase()}, ${when}: show its lines`,
      },
      h("span", { class: "amount" }, money(payout.amount_cents)),
      h("span", { class: `badge ${payout.status}` }, statusText(payout.status)),
      h(
        "span",
        { class: "muted" },
        `${when} · ${payout.commission_count} ${payout.commission_count === 1 ? "commission" : "commissions"}`,
      ),
      payout.adjustment_cents < 0n
        ? h("span", { class: "clawback-note" }, `includes ${money(payout.adjustment_cents)} clawback`)
        : null,
    );
    const panel = h("div", { id: panelId, class: "payout-lines", hidden: true }, this.#lines(payout));
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      panel.hidden = !open;
    });
    return h("li", { class: "payout", "data-payout": payout.id }, toggle, panel);
  }

  #lines(payout: Payout): HTMLElement {
    const money = this.#context.money;
    const rows = payout.lines.map((line) =>
      h(
        "tr",
        { class: line.kind === "adjustment" ? "line adjustment" : "line", "data-line": line.id },
        h(
          "td",
          {},
          line.kind === "adjustment" ? h("span", { class: "badge clawback" }, "Clawback") : null,
          line.kind === "adjustment" ? " " : null,
          line.description,
        ),
        h("td", { class: "amount" }, money(line.amount_cents)),
      ),
    );
    return h(
      "table",
      { class: "lines" },
      h("caption", {}, `What makes up payout ${payout.id}`),
      h(
        "thead",
        {},
        h("tr", {}, h("th", { scope: "col" }, "Line"), h("th", { scope: "col", class: "amount" }, "Amount")),
      ),
      h("tbody", {}, ...rows),
      h(
        "tfoot",
        {},
        h("tr", {}, h("th", { scope: "row" }, "Total"), h("td", { class: "amount" }, money(payout.amount_cents))),
      ),
    );
  }
}
