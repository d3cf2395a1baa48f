/**
 * Payouts: generate this period's payouts, approve or reject each pending one, mark approved ones
 * paid (with the transfer's reference) or failed; the money moves outside, through the provider's
 * file, exported and imported here.
 */

import { fill, formatDate, h, label, money } from "@affiliate/browser-kit";
import { type ItemOf, ValidationError } from "@affiliate/client";
import { attempt, type Screen, type ScreenContext } from "../context.js";
import { type PagedTable, pagedTable, statusFilter } from "../list-screen.js";
import {
  actionButton,
  amountCell,
  badge,
  cell,
  confirmAction,
  field,
  StatusLine,
  section,
  select,
  table,
} from "../ui.js";

type Payout = ItemOf<"listPayouts">;
type PayoutStatus = Payout["status"];

export const payoutsScreen: Screen = (context) => {
  const status = new StatusLine();
  const statusChoice = statusFilter("payout-status", ["pending", "approved", "failed", "processing", "completed"]);
  const list: PagedTable = pagedTable<Payout>({
    context,
    status,
    headings: ["Payout", "Affiliate", "Status", "Commissions", "Amount", "Created", "Paid", ""],
    fetchPage: (cursor) => {
      const chosen = statusChoice.value as PayoutStatus | "";
      return context.client.payouts.list({
        limit: 100,
        ...(chosen ? { status: chosen as Exclude<PayoutStatus, "rejected"> } : {}),
        cursor,
      });
    },
    row: (payout) => payoutRow(context, status, payout, () => void list.load()),
    empty: () =>
      statusChoice.value
        ? `No ${statusChoice.value} payout.`
        : "No payout yet: generate them once commissions are approved.",
  });
  statusChoice.addEventListener("change", () => void list.load());

  const generate = actionButton("Generate payouts", async () => {
    const generated = await attempt(
      context,
      status,
      () => context.client.payouts.generate(),
      (result) =>
        result.data.length === 0
          ? "No new payout: no active affiliate has approved commissions above the payout minimum."
          : `Generated ${result.data.length} payout(s), pending your approval.`,
    );
    if (generated) await list.load();
  });

  void list.load();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Payouts"),
    status.element,
    section(
      "Payouts",
      h(
        "p",
        {},
        "Generating bundles every active affiliate's approved commissions (net of clawbacks) into one pending payout each, when the total reaches the program's minimum.",
      ),
      h("div", { class: "toolbar" }, generate, field("Status", statusChoice)),
      list.element,
    ),
    payoutFiles(context, status, () => void list.load()),
  );
};

function payoutRow(
  context: ScreenContext,
  status: StatusLine,
  payout: Payout,
  changed: () => void,
): HTMLTableRowElement {
  const amount = money(payout.amount_cents, context.currency);
  const who = payout.affiliate.email;
  const act =
    (
      action: "approve" | "reject" | "mark_paid" | "mark_failed",
      done: string,
      ask?: { title: string; consequence: string; confirm: string },
    ) =>
    async () => {
      if (ask && !(await confirmAction(ask))) return;
      let reference: string | undefined;
      if (action === "mark_paid") {
        const input = row.querySelector<HTMLInputElement>("input.reference");
        reference = input?.value.trim() || undefined;
      }
      const result = await attempt(
        context,
        status,
        () => context.client.payouts.update(payout.id, { action, ...(reference ? { reference } : {}) }),
        done,
      );
      if (result) changed();
    };
  const buttons: HTMLElement[] = [];
  if (payout.status === "pending") {
    buttons.push(
      actionButton("Approve", act("approve", `Approved ${amount} for ${who}: ready to pay.`), {
        "aria-label": `Approve payout ${payout.id}`,
      }),
      actionButton(
        "Reject",
        act("reject", `Rejected the payout of ${amount} for ${who}.`, {
          title: `Reject the payout of ${amount} to ${who}?`,
          consequence: `The payout is deleted; its ${payout.commission_count} commission(s) and any clawbacks go back to the pool and are bundled into a later payout.`,
          confirm: "Reject payout",
        }),
        { class: "secondary", "aria-label": `Reject payout ${payout.id}` },
      ),
    );
  } else if (payout.status === "approved") {
    buttons.push(
      h("input", {
        class: "reference",
        type: "text",
        placeholder: "Transfer reference",
        "aria-label": `Transfer reference for payout ${payout.id}`,
      }),
      actionButton(
        "Mark paid",
        act("mark_paid", `Marked ${amount} to ${who} as paid.`, {
          title: `Mark ${amount} to ${who} as paid?`,
          consequence: `Record that you sent ${amount} to ${who}: the payout is completed and its commissions become paid. This cannot be undone; a later refund is clawed back from their next payout.`,
          confirm: "Mark paid",
        }),
        { "aria-label": `Mark payout ${payout.id} paid` },
      ),
      actionButton(
        "Mark failed",
        act("mark_failed", `Marked the payout to ${who} as failed; approve it again to retry.`, {
          title: `Mark the payout of ${amount} to ${who} as failed?`,
          consequence:
            "Record that the transfer did not go through. The payout stays open: approve it again to send it anew.",
          confirm: "Mark failed",
        }),
        { class: "secondary", "aria-label": `Mark payout ${payout.id} failed` },
      ),
    );
  } else if (payout.status === "failed") {
    buttons.push(
      actionButton("Approve again", act("approve", `Approved ${amount} for ${who} again.`), {
        "aria-label": `Approve payout ${payout.id} again`,
      }),
    );
  }
  const row = h(
    "tr",
    { "data-payout": payout.id },
    cell(h("code", {}, payout.id)),
    cell(h("a", { href: `#/affiliates/${encodeURIComponent(payout.partnership_id)}` }, who)),
    cell(badge(payout.status)),
    amountCell(String(payout.commission_count)),
    amountCell(amount),
    cell(formatDate(payout.created_at)),
    cell(
      payout.paid_at ? formatDate(payout.paid_at) : "—",
      payout.gateway_transfer_id ? h("span", { class: "sub" }, payout.gateway_transfer_id) : null,
    ),
    cell(h("div", { class: "row-actions" }, ...buttons)),
  );
  return row;
}

/**
 * Paying with a provider's file: export the approved payouts as PayPal's or Wise's batch file
 * (or the platform's CSV), pay it at the provider, then import the result file, which marks each
 * payout paid or failed, all or nothing, once per file.
 */
function payoutFiles(context: ScreenContext, status: StatusLine, changed: () => void): HTMLElement {
  const format = select(
    [
      { value: "paypal", text: "PayPal Payouts (CSV upload)" },
      { value: "wise", text: "Wise batch transfer" },
      { value: "csv", text: "CSV: every approved payout, with details" },
    ],
    "paypal",
  );
  format.id = "export-format";
  const skipped = h("div", { class: "skipped" });
  const exportButton = actionButton("Download file", async () => {
    const chosen = format.value as FileFormat;
    const file = await attempt(context, status, () => context.client.payouts.export({ format: chosen }));
    if (file === undefined) return;
    const name = `payouts-${chosen}-${new Date().toISOString().slice(0, 10)}.csv`;
    download(name, file);
    // The platform's CSV lists every approved payout; those no provider file can pay say why.
    const everything =
      chosen === "csv" ? file : await attempt(context, status, () => context.client.payouts.export({ format: "csv" }));
    const left = everything === undefined ? [] : skippedPayouts(everything);
    status.ok(
      `Downloaded ${name}: upload it to ${chosen === "wise" ? "Wise" : chosen === "paypal" ? "PayPal" : "your bank or provider"}, pay it there, then import the result below.${left.length > 0 ? ` ${left.length} approved payout(s) are not in it (see below).` : ""}`,
    );
    fill(
      skipped,
      left.length === 0
        ? null
        : table(
            ["Payout", "Amount", "Why it is not in the file"],
            left.map((row) =>
              h(
                "tr",
                { class: "skipped-payout" },
                cell(h("code", {}, row.payoutId)),
                amountCell(`${row.amount} ${row.currency.toUpperCase()}`),
                cell(row.reason),
              ),
            ),
            "",
            "Approved payouts left out",
          ),
    );
  });

  const fileInput = h("input", { id: "import-file", type: "file", accept: ".csv,text/csv" });
  const importFormat = select(
    [
      { value: "", text: "Recognise from the header" },
      { value: "paypal", text: "PayPal Payouts report" },
      { value: "wise", text: "Wise transfer export" },
      { value: "csv", text: "CSV: payout_id,status[,reference]" },
    ],
    "",
  );
  importFormat.id = "import-format";
  const result = h("div", { class: "import-result" });
  const importButton = actionButton("Import results", async () => {
    const chosenFile = fileInput.files?.[0];
    if (!chosenFile) {
      status.error("Choose the provider's result file first.");
      return;
    }
    const text = await chosenFile.text();
    const chosen = importFormat.value as FileFormat | "";
    const sure = await confirmAction({
      title: `Import ${chosenFile.name}?`,
      consequence:
        "Every payout the file lists is marked paid (its commissions become paid) or failed, as the file says. If any line is wrong nothing is applied; the same file imported again changes nothing.",
      confirm: "Import results",
    });
    if (!sure) return;
    try {
      const { data } = await context.client.payouts.import(text, chosen ? { format: chosen } : {});
      status.ok(
        data.already_imported
          ? `This file was already imported on ${formatDate(data.imported_at)}: nothing changed now.`
          : `Imported ${chosenFile.name}: ${data.paid} paid, ${data.failed} failed, ${data.unchanged} unchanged, ${data.pending} not final yet.`,
      );
      fill(
        result,
        table(
          ["Line", "Payout", "Outcome"],
          data.lines.map((line) =>
            h(
              "tr",
              { class: "import-line" },
              cell(String(line.line)),
              cell(h("code", {}, line.payout_id)),
              cell(badge(line.outcome)),
            ),
          ),
          "The file listed no payout.",
        ),
      );
      changed();
    } catch (error) {
      if (error instanceof ValidationError && Object.keys(error.fieldErrors).length > 0) {
        status.error(`${chosenFile.name} was refused and nothing was applied. Fix these lines and import it again:`);
        fill(
          result,
          h(
            "ul",
            { class: "refused-lines" },
            ...Object.entries(error.fieldErrors).map(([line, messages]) =>
              h("li", {}, `${label(line)}: ${messages.join("; ")}`),
            ),
          ),
        );
        return;
      }
      fill(result);
      await attempt(context, status, () => Promise.reject(error));
    }
  });

  return section(
    "Pay with a file",
    h(
      "p",
      {},
      "Export the approved payouts as the file your payment provider takes, pay it there, then import the provider's result file to mark each payout paid or failed.",
    ),
    h("h3", {}, "1. Export"),
    h("div", { class: "toolbar" }, field("File format", format), exportButton),
    skipped,
    h("h3", {}, "2. Import the result"),
    h(
      "div",
      { class: "toolbar" },
      field("Result file", fileInput),
      field("Result file format", importFormat),
      importButton,
    ),
    result,
  );
}

type FileFormat = "paypal" | "wise" | "csv";

/** Saves `text` as a file the browser downloads: a Blob of this page, no request to anywhere. */
function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = h("a", { href: url, download: name, hidden: true }, name);
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The rows of the platform's CSV export that no provider file can pay, with the reason. */
export function skippedPayouts(csv: string): { payoutId: string; amount: string; currency: string; reason: string }[] {
  const [header, ...rows] = parseCsv(csv);
  if (!header) return [];
  const column = (name: string) => header.indexOf(name);
  const [id, amount, currency, reason] = ["payout_id", "amount", "currency", "skipped_reason"].map(column);
  if ([id, amount, currency, reason].some((index) => index === undefined || index < 0)) return [];
  return rows
    .filter((row) => (row[reason as number] ?? "") !== "")
    .map((row) => ({
      payoutId: row[id as number] ?? "",
      amount: row[amount as number] ?? "",
      currency: row[currency as number] ?? "",
      reason: row[reason as number] ?? "",
    }));
}

/** RFC 4180 CSV: quoted fields may hold commas, quotes (doubled) and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let value = "";
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        value += '"';
        index++;
      } else if (char === '"') quoted = false;
      else value += char;
    } else if (char === '"') quoted = true;
    else if (char === ",") {
      row.push(value);
      value = "";
    } else if (char === "\n" || char === "\r") {
      if (char === "\r" && text[index + 1] === "\n") index++;
      row.push(value);
      rows.push(row);
      row = [];
      value = "";
    } else value += char;
  }
  if (value !== "" || row.length > 0) {
    row.push(value);
    rows.push(row);
  }
  return rows;
}
