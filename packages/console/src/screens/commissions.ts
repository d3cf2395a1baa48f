/**
 * Commissions: every commission with filters (status, affiliate, payout), approve one before its
 * hold ends or reject it; and the review queue: commissions a fraud signal held, decided here.
 */

import { fill, formatDate, h, money } from "@affiliate/browser-kit";
import type { ItemOf } from "@affiliate/client";
import { attempt, type Screen, type ScreenContext } from "../context.js";
import { type PagedTable, pagedTable, statusFilter } from "../list-screen.js";
import { actionButton, amountCell, badge, cell, confirmAction, field, StatusLine, section, table } from "../ui.js";

type Commission = ItemOf<"listCommissions">;
type CommissionStatus = Commission["status"];

export const commissionsScreen: Screen = (context) => {
  const status = new StatusLine();
  const statusChoice = statusFilter("commission-status", ["pending", "approved", "paid", "rejected", "refunded"]);
  const partnership = h("input", { id: "commission-partnership", type: "text", placeholder: "ptn_…" });
  const payout = h("input", { id: "commission-payout", type: "text", placeholder: "po_…" });
  const form = h(
    "form",
    { class: "filters", "aria-label": "Filter commissions" },
    field("Status", statusChoice),
    field("Affiliate (partnership id)", partnership),
    field("Payout id", payout),
    h("button", { type: "submit" }, "Filter"),
  );
  const list: PagedTable = pagedTable<Commission>({
    context,
    status,
    headings: ["Commission", "Affiliate", "Level", "Status", "Amount", "Payment", "Created", ""],
    fetchPage: (cursor) =>
      context.client.commissions.list({
        limit: 50,
        ...(statusChoice.value ? { status: statusChoice.value as CommissionStatus } : {}),
        ...(partnership.value.trim() ? { partnership_id: partnership.value.trim() } : {}),
        ...(payout.value.trim() ? { payout_id: payout.value.trim() } : {}),
        cursor,
      }),
    row: (commission) => commissionRow(context, status, commission, () => void list.load()),
    empty: () => "No commission matches.",
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void list.load();
  });

  const queue = h("div", { class: "review-queue" }, h("p", { class: "loading" }, "Loading…"));
  const loadQueue = async () => {
    const page = await attempt(context, status, () => context.client.commissions.list({ flagged: "true", limit: 50 }));
    if (!page) return;
    fill(
      queue,
      table(
        ["Commission", "Affiliate", "Amount", "Signals", "Decide"],
        page.data.map((commission) =>
          reviewRow(context, status, commission, () => void Promise.all([loadQueue(), list.load()])),
        ),
        "Nothing waits for review.",
      ),
    );
  };

  void loadQueue();
  void list.load();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Commissions"),
    status.element,
    section(
      "Review queue",
      h("p", {}, "Commissions a fraud signal held: they are not approved or paid until you decide."),
      queue,
    ),
    section("Commissions", form, list.element),
  );
};

/** A flagged commission with its signals and their evidence, and the decision with a note. */
function reviewRow(context: ScreenContext, status: StatusLine, commission: Commission, decided: () => void) {
  const amount = money(commission.amount_cents, context.currency);
  const note = h("input", {
    type: "text",
    class: "reference",
    placeholder: "Note",
    "aria-label": `Note on commission ${commission.id}`,
  });
  const decide = (decision: "approve" | "reject") => async () => {
    if (
      decision === "reject" &&
      !(await confirmAction({
        title: `Reject the flagged commission of ${amount}?`,
        consequence: `${commission.affiliate.email} will not be paid it; your decision and note are kept with the commission.`,
        confirm: "Reject commission",
      }))
    )
      return;
    const done = await attempt(
      context,
      status,
      () => context.client.commissions.review(commission.id, { decision, note: note.value.trim() }),
      decision === "approve" ? `Approved ${amount} after review.` : `Rejected ${amount} after review.`,
    );
    if (done) decided();
  };
  return h(
    "tr",
    { "data-review": commission.id },
    cell(h("code", {}, commission.id)),
    cell(commission.affiliate.email, h("span", { class: "sub" }, commission.customer_email ?? "")),
    amountCell(amount),
    cell(
      ...commission.flags.map((flag) =>
        h(
          "span",
          { class: "sub flag" },
          `${flag.signal.replaceAll("_", " ")}: ${Object.entries(flag.evidence)
            .map(([name, value]) => `${name} ${value}`)
            .join(", ")}`,
        ),
      ),
    ),
    cell(
      h(
        "div",
        { class: "row-actions" },
        note,
        actionButton("Approve", decide("approve"), { "aria-label": `Approve flagged commission ${commission.id}` }),
        actionButton("Reject", decide("reject"), {
          class: "secondary",
          "aria-label": `Reject flagged commission ${commission.id}`,
        }),
      ),
    ),
  );
}

function commissionRow(context: ScreenContext, status: StatusLine, commission: Commission, changed: () => void) {
  const amount = money(commission.amount_cents, context.currency);
  const buttons: HTMLElement[] = [];
  if (commission.status === "pending") {
    buttons.push(
      actionButton(
        "Approve",
        async () => {
          const done = await attempt(
            context,
            status,
            () => context.client.commissions.update(commission.id, { action: "approve" }),
            `Approved ${amount}: it ends its hold now and goes into the next payout.`,
          );
          if (done) changed();
        },
        { "aria-label": `Approve commission ${commission.id}` },
      ),
    );
  }
  if (commission.status === "pending" || (commission.status === "approved" && !commission.payout_id)) {
    buttons.push(
      actionButton(
        "Reject",
        async () => {
          const sure = await confirmAction({
            title: `Reject the commission of ${amount}?`,
            consequence:
              "The affiliate will not be paid this commission (nor its sponsor the level-2 share). This cannot be undone.",
            confirm: "Reject commission",
          });
          if (!sure) return;
          const done = await attempt(
            context,
            status,
            () => context.client.commissions.update(commission.id, { action: "reject" }),
            `Rejected the commission of ${amount}.`,
          );
          if (done) changed();
        },
        { class: "secondary", "aria-label": `Reject commission ${commission.id}` },
      ),
    );
  }
  return h(
    "tr",
    { "data-commission": commission.id },
    cell(
      h("code", {}, commission.id),
      commission.hold_reason ? h("span", { class: "sub" }, `Held: ${commission.hold_reason}`) : null,
    ),
    cell(commission.affiliate.email, h("span", { class: "sub" }, commission.referral_code)),
    cell(String(commission.level)),
    cell(badge(commission.status)),
    amountCell(amount),
    amountCell(money(commission.payment_amount_cents, context.currency)),
    cell(formatDate(commission.created_at)),
    cell(h("div", { class: "row-actions" }, ...buttons)),
  );
}
