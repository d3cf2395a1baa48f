/**
 * Affiliates: the pending queue first (approve, reject), then every partnership with a search by
 * email, referral code or external id, and one partnership's detail: its figures, commissions,
 * payouts, and a portal link made from a fresh token.
 */

import { fill, formatCount, formatDate, h, money } from "@affiliate/browser-kit";
import { type AffiliateClient, type ItemOf, NotFoundError } from "@affiliate/client";
import { attempt, type Screen, type ScreenContext } from "../context.js";
import { statusFilter } from "../list-screen.js";
import { actionButton, amountCell, badge, cell, confirmAction, field, StatusLine, section, table } from "../ui.js";

type Partnership = ItemOf<"listAffiliates">;

const pageSize = 25;

export const affiliatesScreen: Screen = (context, [id]) =>
  id ? partnershipDetail(context, id) : affiliatesList(context);

function affiliatesList(context: ScreenContext): HTMLElement {
  const status = new StatusLine();
  const pending = h("div", { class: "pending-queue" }, h("p", { class: "loading" }, "Loading…"));
  const results = h("div", { class: "affiliate-results" });

  const query = h("input", {
    id: "affiliate-search",
    type: "search",
    placeholder: "ada@example.com, ADA20 or user_42",
  });
  const statusChoice = statusFilter("affiliate-status", ["pending", "active", "rejected", "removed"]);
  const searchForm = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Search affiliates" },
    field("Email, referral code or external id", query),
    field("Status", statusChoice),
    h("button", { type: "submit" }, "Search"),
  );

  const loadPending = async () => {
    const page = await attempt(context, status, () =>
      context.client.affiliates.list({ status: "pending", limit: 100 }),
    );
    if (!page) return;
    fill(
      pending,
      table(
        ["Affiliate", "Referral code", "Applied", ""],
        page.data.map((partnership) => pendingRow(context, status, partnership, () => void reload())),
        "No affiliate is waiting for approval.",
      ),
      page.pagination.has_more ? h("p", { class: "hint" }, "Showing the 100 newest applications.") : null,
    );
  };

  const loadResults = async () => {
    const found = await attempt(context, status, () =>
      search(context.client, query.value.trim(), statusChoice.value as Partnership["status"] | ""),
    );
    if (!found) return;
    fill(
      results,
      table(
        ["Affiliate", "Referral code", "Status", "Clicks", "Conversions", "Earned", "Joined"],
        found.map((partnership) => listRow(context, partnership)),
        query.value.trim() ? "No affiliate matches this search." : "The program has no affiliate yet.",
      ),
    );
  };

  const reload = async () => {
    await Promise.all([loadPending(), loadResults()]);
  };

  searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void loadResults();
  });
  void reload();

  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Affiliates"),
    status.element,
    section("Waiting for approval", pending),
    section("All affiliates", searchForm, results),
  );
}

/**
 * What a search asks the API: an email (it has an @), else a referral code or an external id,
 * both exact; one request each, results merged. Empty: the newest page.
 */
async function search(
  client: AffiliateClient,
  text: string,
  status: Partnership["status"] | "",
): Promise<Partnership[]> {
  const base = { limit: pageSize, ...(status ? { status } : {}) };
  if (!text) return (await client.affiliates.list(base)).data;
  if (text.includes("@")) return (await client.affiliates.list({ ...base, email: text })).data;
  const [byCode, byExternalId] = await Promise.all([
    client.affiliates.list({ ...base, referral_code: text }),
    client.affiliates.list({ ...base, external_id: text }),
  ]);
  const seen = new Set<string>();
  return [...byCode.data, ...byExternalId.data].filter(
    (partnership) => !seen.has(partnership.id) && seen.add(partnership.id),
  );
}

function affiliateCell(partnership: Partnership) {
  return cell(
    h(
      "a",
      { href: `#/affiliates/${encodeURIComponent(partnership.id)}`, class: "affiliate-link" },
      partnership.affiliate.name || partnership.affiliate.email,
    ),
    h("span", { class: "sub" }, partnership.affiliate.email),
  );
}

function listRow(context: ScreenContext, partnership: Partnership): HTMLTableRowElement {
  return h(
    "tr",
    { "data-partnership": partnership.id },
    affiliateCell(partnership),
    cell(h("code", {}, partnership.referral_code)),
    cell(badge(partnership.status)),
    amountCell(formatCount(partnership.stats.clicks)),
    amountCell(formatCount(partnership.stats.conversions)),
    amountCell(money(partnership.stats.earned_cents, context.currency)),
    cell(formatDate(partnership.created_at)),
  );
}

function pendingRow(
  context: ScreenContext,
  status: StatusLine,
  partnership: Partnership,
  changed: () => void,
): HTMLTableRowElement {
  const who = partnership.affiliate.email;
  const decide = (to: "active" | "rejected") => async () => {
    if (to === "rejected") {
      const sure = await confirmAction({
        title: `Reject ${who}?`,
        consequence: `${who} will not join the program: the referral code ${partnership.referral_code} earns nothing and its clicks are refused. You can approve them later from the list of all affiliates.`,
        confirm: "Reject application",
      });
      if (!sure) return;
    }
    const done = await attempt(
      context,
      status,
      () => context.client.affiliates.update(partnership.id, { status: to }),
      to === "active" ? `Approved ${who}: they can now earn commissions.` : `Rejected ${who}.`,
    );
    if (done) changed();
  };
  return h(
    "tr",
    { "data-partnership": partnership.id },
    affiliateCell(partnership),
    cell(h("code", {}, partnership.referral_code)),
    cell(formatDate(partnership.created_at)),
    cell(
      h(
        "div",
        { class: "row-actions" },
        actionButton("Approve", decide("active"), { "aria-label": `Approve ${who}` }),
        actionButton("Reject", decide("rejected"), { class: "secondary", "aria-label": `Reject ${who}` }),
      ),
    ),
  );
}

function partnershipDetail(context: ScreenContext, id: string): HTMLElement {
  const status = new StatusLine();
  const summary = h("div", { class: "detail-summary" }, h("p", { class: "loading" }, "Loading…"));
  const commissions = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const payouts = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  const access = h("div", { class: "access" });
  const title = h("h1", {}, "Affiliate");

  const payoutMethod = h("span", { class: "payout-method" }, "…");
  const loadPayoutMethod = async () => {
    try {
      const { data } = await context.client.affiliates.payoutMethod(id);
      const where =
        data.type === "paypal"
          ? `PayPal ${data.email ?? ""}`
          : `Wise ${data.account_holder_name ?? ""} ${data.iban ?? data.email ?? ""}`;
      fill(payoutMethod, `${where.trim()} (set ${formatDate(data.updated_at)})`);
    } catch (error) {
      if (error instanceof NotFoundError) fill(payoutMethod, "None set: their payouts are left out of provider files");
      else await attempt(context, status, () => Promise.reject(error));
    }
  };

  const load = async () => {
    void loadPayoutMethod();
    const detail = await attempt(context, status, () => context.client.affiliates.get(id));
    if (!detail) return;
    const partnership = detail.data;
    fill(title, partnership.affiliate.name || partnership.affiliate.email);
    fill(
      summary,
      h(
        "dl",
        { class: "facts" },
        fact("Email", partnership.affiliate.email),
        fact("Status", badge(partnership.status)),
        fact("Referral code", h("code", {}, partnership.referral_code)),
        fact("External id", partnership.external_id ?? "—"),
        fact("Joined", formatDate(partnership.created_at)),
        fact("Clicks", formatCount(partnership.stats.clicks)),
        fact("Conversions", formatCount(partnership.stats.conversions)),
        fact("Earned (all time)", money(partnership.stats.earned_cents, context.currency)),
        fact(
          "Pending",
          `${money(partnership.commissions.pending_amount_cents, context.currency)} in ${formatCount(partnership.commissions.pending_count)} commissions`,
        ),
        fact(
          "Approved, not paid",
          `${money(partnership.commissions.approved_amount_cents, context.currency)} in ${formatCount(partnership.commissions.approved_count)} commissions`,
        ),
        fact("Commission terms", partnership.commission_override ? "Its own (override)" : "The program's"),
        fact("Payout method", payoutMethod),
      ),
      statusActions(context, status, partnership, () => void load()),
    );
    fillAccess(context, status, access, partnership);
  };

  const loadCommissions = async () => {
    const page = await attempt(context, status, () =>
      context.client.commissions.list({ partnership_id: id, limit: 25 }),
    );
    if (!page) return;
    fill(
      commissions,
      table(
        ["Commission", "Level", "Status", "Amount", "Payment", "Created"],
        page.data.map((commission) =>
          h(
            "tr",
            { "data-commission": commission.id },
            cell(h("code", {}, commission.id)),
            cell(String(commission.level)),
            cell(badge(commission.status)),
            amountCell(money(commission.amount_cents, context.currency)),
            amountCell(money(commission.payment_amount_cents, context.currency)),
            cell(formatDate(commission.created_at)),
          ),
        ),
        "No commission yet.",
      ),
    );
  };

  const loadPayouts = async () => {
    const page = await attempt(context, status, () => context.client.payouts.list({ partnership_id: id, limit: 25 }));
    if (!page) return;
    fill(
      payouts,
      table(
        ["Payout", "Status", "Amount", "Created", "Paid"],
        page.data.map((payout) =>
          h(
            "tr",
            { "data-payout": payout.id },
            cell(h("code", {}, payout.id)),
            cell(badge(payout.status)),
            amountCell(money(payout.amount_cents, context.currency)),
            cell(formatDate(payout.created_at)),
            cell(formatDate(payout.paid_at)),
          ),
        ),
        "No payout yet.",
      ),
    );
  };

  void load();
  void loadCommissions();
  void loadPayouts();

  return h(
    "div",
    { class: "screen" },
    h("p", { class: "back" }, h("a", { href: "#/affiliates" }, "← All affiliates")),
    title,
    status.element,
    section("Partnership", summary),
    section("Dashboard access", access),
    section("Latest commissions", commissions),
    section("Payouts", payouts),
  );
}

const fact = (term: string, value: Node | string) => h("div", { class: "fact" }, h("dt", {}, term), h("dd", {}, value));

type PartnershipDetail = Awaited<ReturnType<AffiliateClient["affiliates"]["get"]>>["data"];

/** The transitions the contract allows from the partnership's status, each said in words. */
function statusActions(
  context: ScreenContext,
  status: StatusLine,
  partnership: PartnershipDetail,
  changed: () => void,
): HTMLElement {
  const who = partnership.affiliate.email;
  const change = (to: "active" | "rejected" | "removed", text: string, consequence?: string) =>
    actionButton(
      text,
      async () => {
        if (consequence && !(await confirmAction({ title: `${text}: ${who}?`, consequence, confirm: text }))) return;
        const done = await attempt(
          context,
          status,
          () => context.client.affiliates.update(partnership.id, { status: to }),
          `${who} is now ${to}.`,
        );
        if (done) changed();
      },
      to === "active" ? {} : { class: "danger" },
    );
  const buttons: HTMLElement[] = [];
  if (partnership.status === "pending") {
    buttons.push(change("active", "Approve"));
    buttons.push(
      change(
        "rejected",
        "Reject",
        `${who} will not join the program; the code ${partnership.referral_code} earns nothing.`,
      ),
    );
  } else if (partnership.status === "active") {
    buttons.push(
      change(
        "removed",
        "Remove from program",
        `${who} leaves the program: clicks on ${partnership.referral_code} are refused, new payments earn nothing, and their dashboard tokens stop working. Commissions already earned stay.`,
      ),
    );
  } else {
    buttons.push(change("active", "Reactivate"));
  }
  return h("div", { class: "row-actions" }, ...buttons);
}

/** A fresh token and the portal link it makes, to hand to the affiliate; and revoking them all. */
function fillAccess(context: ScreenContext, status: StatusLine, access: HTMLElement, partnership: PartnershipDetail) {
  const who = partnership.affiliate.email;
  if (partnership.status !== "active") {
    fill(access, h("p", { class: "hint" }, "Dashboard links are made for active affiliates only."));
    return;
  }
  const link = h("input", { id: "portal-link", type: "text", readonly: true, class: "portal-link", value: "" });
  const linkField = h("div", { class: "link-field", hidden: true }, field("Portal link (valid 24 hours)", link));
  const mint = actionButton("Make a portal link", async () => {
    const minted = await attempt(
      context,
      status,
      () => context.client.affiliates.tokens.mint(partnership.id, { ttl_seconds: 86_400 }),
      (result) => `A link for ${who}, valid until ${formatDate(result.data.expires_at)}. It is shown only now.`,
    );
    if (!minted) return;
    link.value = `${location.origin}/portal#token=${minted.data.token}`;
    linkField.hidden = false;
    link.select();
  });
  const revoke = actionButton(
    "Revoke every link",
    async () => {
      const sure = await confirmAction({
        title: `Revoke ${who}'s dashboard links?`,
        consequence: `Every portal link and token of ${who} stops working within seconds; they can still sign in to the portal by email.`,
        confirm: "Revoke links",
      });
      if (!sure) return;
      const done = await attempt(
        context,
        status,
        () => context.client.affiliates.tokens.revoke(partnership.id),
        (result) => `Revoked ${result.data.revoked_count} live token(s) of ${who}.`,
      );
      if (done) linkField.hidden = true;
    },
    { class: "danger" },
  );
  fill(
    access,
    h(
      "p",
      {},
      "A link opens this affiliate's own dashboard (their link, figures, commissions and payouts) without a password.",
    ),
    h("div", { class: "row-actions" }, mint, revoke),
    linkField,
  );
}
