/**
 * The commissions: each with its status, the payment it came from, its hold or review, a
 * refund's reason and the payout that paid it; page by page, newest first.
 */
import { formatDate, h, label } from "@affiliate/browser-kit";
import type { Commission } from "../client.js";
import { loadPagedList } from "./paged-list.js";
import { card, type DashboardContext, type Section } from "./section.js";

export class CommissionsSection implements Section {
  readonly body = h("div");
  readonly element = card("commissions-title", "Commissions", this.body);
  readonly #context: DashboardContext;

  constructor(context: DashboardContext) {
    this.#context = context;
  }

  load(): Promise<void> {
    const { client } = this.#context;
    return loadPagedList<Commission>({
      context: this.#context,
      body: this.body,
      fetchPage: (cursor) => client.affiliate.commissions.list({ limit: 20, cursor }),
      item: (commission) => this.#item(commission),
      listClass: "commissions",
      listLabel: "Commissions, newest first",
      moreLabel: "Show older commissions",
      empty:
        "No commissions yet. Each payment from a customer you referred earns one, and it appears here as soon as it is recorded.",
    });
  }

  #item(commission: Commission): HTMLElement {
    const money = this.#context.money;
    const details: (string | HTMLElement)[] = [];
    details.push(
      commission.level === 2
        ? `From a sale of an affiliate you recruited (${money(commission.payment_amount_cents)} payment)`
        : `On a ${money(commission.payment_amount_cents)} payment`,
    );
    if (commission.customer) details.push(`Customer ${commission.customer}`);
    // A commission the program's fraud checks flagged: the merchant decides; what raised the flag
    // is not the affiliate's to see (the API does not send it).
    const underReview = commission.hold_reason === "review";
    if (commission.status === "pending" && !underReview)
      details.push(`Held until ${formatDate(commission.hold_until)}`);
    if (underReview) {
      details.push(
        h(
          "span",
          { class: "reason hold" },
          h("strong", {}, "Under review: "),
          "the program checks it before it can be paid",
        ),
      );
    } else if (commission.hold_reason) {
      details.push(h("span", { class: "reason hold" }, h("strong", {}, "On hold: "), commission.hold_reason));
    }
    if (commission.refund_reason) {
      details.push(h("span", { class: "reason refund" }, h("strong", {}, "Refunded: "), commission.refund_reason));
    } else if (commission.status === "refunded") {
      details.push(h("span", { class: "reason refund" }, h("strong", {}, "Refunded"), " (no reason given)"));
    }
    if (commission.payout_id) details.push(`In payout ${commission.payout_id}`);
    return h(
      "li",
      { class: "commission", "data-commission": commission.id },
      h(
        "div",
        { class: "row-main" },
        h("span", { class: "amount" }, money(commission.amount_cents)),
        underReview
          ? h("span", { class: "badge pending" }, "Under review")
          : h("span", { class: `badge ${commission.status}` }, label(commission.status)),
        h("time", { datetime: commission.created_at, class: "muted" }, formatDate(commission.created_at)),
      ),
      h("ul", { class: "row-details" }, ...details.map((detail) => h("li", {}, detail))),
    );
  }
}
