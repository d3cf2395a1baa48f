/**
 * The signed-in page: the referral link, the period's figures against the previous period, the
 * daily chart, the commissions and the payouts with their lines. Each section loads and fails on
 * its own, and says what to do when it fails; a 401 anywhere means the token is gone.
 */
import type { AffiliateApi, Commission, Me, Metrics, Page, Payout, Period, Stats } from "./api.js";
import { dailyChart } from "./chart.js";
import { fill, h } from "./dom.js";
import { formatCount, formatDate, formatDay, formatRate, periodOf, periods } from "./format.js";
import { explain, isSignedOut } from "./messages.js";
import { changeAgainst, formatCents } from "./money.js";
import { PayoutMethodCard } from "./payout-method.js";

export interface DashboardOptions {
  api: AffiliateApi;
  onSignOut: () => void;
  /** The token stopped working (expired, revoked, or the partnership ended). */
  onExpired: () => void;
}

type ChartMetric = "commissions_cents" | "clicks" | "conversions";

const chartMetrics: { value: ChartMetric; label: string; title: string }[] = [
  { value: "commissions_cents", label: "Earnings", title: "Daily earnings" },
  { value: "clicks", label: "Clicks", title: "Daily clicks" },
  { value: "conversions", label: "Conversions", title: "Daily conversions" },
];

const commissionStatusText: Record<Commission["status"], string> = {
  pending: "Pending",
  approved: "Approved",
  paid: "Paid",
  rejected: "Rejected",
  refunded: "Refunded",
};

const payoutStatusText: Record<Payout["status"], string> = {
  pending: "Pending",
  approved: "Approved",
  failed: "Failed",
  processing: "Processing",
  completed: "Paid",
};

export class Dashboard {
  readonly element: HTMLElement;
  readonly #api: AffiliateApi;
  readonly #options: DashboardOptions;
  #currency = "usd";
  #period: Period = "30d";
  #chartMetric: ChartMetric = "commissions_cents";
  #stats: Stats | null = null;
  #expired = false;

  readonly #programName = h("p", { class: "program" });
  readonly #linkSection = h("section", { class: "card", "aria-labelledby": "link-title" });
  readonly #statsBody = h("div", { class: "stats-body", "aria-live": "polite" });
  readonly #periodButtons: HTMLButtonElement[];
  readonly #commissionsBody = h("div");
  readonly #payoutsBody = h("div");
  readonly #payoutMethod: PayoutMethodCard;

  constructor(options: DashboardOptions) {
    this.#options = options;
    this.#api = options.api;
    this.#payoutMethod = new PayoutMethodCard(options.api, (error) => this.#signedOut(error));
    this.#periodButtons = periods.map((period) => {
      const button = h(
        "button",
        { type: "button", class: "segment", "data-period": period.value, "aria-pressed": "false" },
        period.label,
      );
      button.addEventListener("click", () => this.#switchPeriod(period.value));
      return button;
    });
    const signOut = h("button", { type: "button", class: "quiet" }, "Sign out");
    signOut.addEventListener("click", () => options.onSignOut());

    this.element = h(
      "div",
      { class: "dashboard" },
      h("header", { class: "top" }, h("div", {}, this.#programName, h("h1", {}, "Your affiliate dashboard")), signOut),
      h(
        "main",
        {},
        this.#linkSection,
        h(
          "section",
          { class: "card", "aria-labelledby": "stats-title" },
          h(
            "div",
            { class: "section-head" },
            h("h2", { id: "stats-title" }, "Performance"),
            h("div", { class: "segments", role: "group", "aria-label": "Period" }, ...this.#periodButtons),
          ),
          this.#statsBody,
        ),
        h(
          "section",
          { class: "card", "aria-labelledby": "commissions-title" },
          h("h2", { id: "commissions-title" }, "Commissions"),
          this.#commissionsBody,
        ),
        h(
          "section",
          { class: "card", "aria-labelledby": "payouts-title" },
          h("h2", { id: "payouts-title" }, "Payouts"),
          this.#payoutsBody,
        ),
        this.#payoutMethod.element,
      ),
    );
  }

  /** Loads every section; `me` first, since the currency of every amount comes with it. */
  async load(): Promise<void> {
    fill(this.#linkSection, loading("Loading your link…"));
    for (const body of [this.#statsBody, this.#commissionsBody, this.#payoutsBody]) fill(body, loading("Loading…"));
    let me: Me;
    try {
      me = await this.#api.me();
    } catch (error) {
      if (this.#signedOut(error)) return;
      fill(
        this.#linkSection,
        this.#failure(error, () => this.load()),
      );
      for (const body of [this.#statsBody, this.#commissionsBody, this.#payoutsBody]) body.replaceChildren();
      return;
    }
    this.#currency = me.program.currency;
    this.#programName.textContent = me.program.name;
    document.title = `${me.program.name} · Affiliate dashboard`;
    this.#renderLink(me);
    await Promise.all([this.#loadStats(), this.#loadCommissions(), this.#loadPayouts(me), this.#payoutMethod.load()]);
  }

  #money = (cents: bigint) => formatCents(cents, this.#currency);

  #signedOut(error: unknown): boolean {
    if (!isSignedOut(error)) return false;
    if (!this.#expired) {
      this.#expired = true;
      this.#options.onExpired();
    }
    return true;
  }

  #failure(error: unknown, retry: () => void): HTMLElement {
    const again = h("button", { type: "button" }, "Try again");
    again.addEventListener("click", retry);
    return h("div", { class: "failure", role: "alert" }, h("p", { class: "error" }, explain(error)), again);
  }

  // ───────────────────────────── the link ─────────────────────────────

  #renderLink(me: Me) {
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
    fill(
      this.#linkSection,
      h("h2", { id: "link-title" }, `Your referral ${what}`),
      h("div", { class: "copy-row" }, field, copy),
      status,
      h(
        "p",
        { class: "muted" },
        `Code ${me.referral_code}. Commissions are held ${me.program.hold_days} ${me.program.hold_days === 1 ? "day" : "days"} before they can be paid`,
        me.program.payout_minimum_cents !== undefined && me.program.payout_minimum_cents > 0n
          ? `; payouts start at ${this.#money(me.program.payout_minimum_cents)}.`
          : ".",
      ),
    );
  }

  // ───────────────────────────── the figures ─────────────────────────────

  async #switchPeriod(period: Period) {
    if (period === this.#period && this.#stats) return;
    this.#period = period;
    await this.#loadStats();
  }

  async #loadStats() {
    const period = this.#period;
    for (const button of this.#periodButtons) {
      button.setAttribute("aria-pressed", String(button.dataset.period === period));
    }
    this.#statsBody.setAttribute("aria-busy", "true");
    try {
      const stats = await this.#api.stats(period);
      // A slower answer for a period since switched away from is dropped.
      if (period !== this.#period) return;
      this.#stats = stats;
      this.#renderStats();
    } catch (error) {
      if (this.#signedOut(error) || period !== this.#period) return;
      fill(
        this.#statsBody,
        this.#failure(error, () => this.#loadStats()),
      );
    } finally {
      if (period === this.#period) this.#statsBody.removeAttribute("aria-busy");
    }
  }

  #renderStats() {
    const stats = this.#stats;
    if (!stats) return;
    const previous = periodOf(stats.period).previous;
    const card = (key: string, label: string, value: string, change?: { current: bigint; before: bigint }) => {
      const delta = change ? changeAgainst(change.current, change.before) : null;
      return h(
        "div",
        { class: "kpi", "data-kpi": key },
        h("h3", {}, label),
        h("p", { class: "kpi-value" }, value),
        delta
          ? h(
              "p",
              { class: `kpi-change ${delta.direction}` },
              h("span", { class: "kpi-delta" }, delta.text),
              ` vs ${previous}`,
            )
          : h("p", { class: "kpi-change flat" }, "\u00a0"),
      );
    };
    const counted = (metric: keyof Metrics) => ({
      current: BigInt(stats[metric]),
      before: BigInt(stats.previous_period[metric]),
    });
    const quiet = stats.clicks === 0 && stats.conversions === 0 && stats.signups === 0;

    const metricButtons = chartMetrics.map((metric) => {
      const button = h(
        "button",
        {
          type: "button",
          class: "segment",
          "data-metric": metric.value,
          "aria-pressed": String(metric.value === this.#chartMetric),
        },
        metric.label,
      );
      button.addEventListener("click", () => {
        this.#chartMetric = metric.value;
        this.#renderStats();
      });
      return button;
    });
    const chosen = chartMetrics.find((metric) => metric.value === this.#chartMetric) ?? chartMetrics[0];
    const isMoney = this.#chartMetric === "commissions_cents";

    fill(
      this.#statsBody,
      h(
        "div",
        { class: "kpis" },
        card("clicks", "Clicks", formatCount(stats.clicks), counted("clicks")),
        card("signups", "Signups", formatCount(stats.signups), counted("signups")),
        card("conversions", "Conversions", formatCount(stats.conversions), counted("conversions")),
        card("conversion_rate", "Conversion rate", formatRate(stats.conversion_rate)),
        card("revenue", "Revenue referred", this.#money(stats.revenue_cents), counted("revenue_cents")),
        card("earnings", "Earnings", this.#money(stats.commissions_cents), counted("commissions_cents")),
      ),
      quiet
        ? h(
            "p",
            { class: "empty" },
            `No clicks in the last ${periodOf(stats.period).label} yet. Share your referral link: every visit through it shows here within a minute.`,
          )
        : null,
      h(
        "div",
        { class: "chart-head" },
        h("h3", { id: "chart-title" }, chosen?.title ?? "Daily"),
        h("div", { class: "segments", role: "group", "aria-label": "Chart shows" }, ...metricButtons),
      ),
      dailyChart({
        title: chosen?.title ?? "Daily",
        points: stats.timeseries.map((point) => ({ date: point.date, value: BigInt(point[this.#chartMetric]) })),
        format: isMoney ? this.#money : formatCount,
        formatDay,
      }),
    );
  }

  // ───────────────────────────── commissions ─────────────────────────────

  async #loadCommissions(cursor?: string) {
    const more = cursor !== undefined;
    let page: Page<Commission>;
    try {
      page = await this.#api.commissions(cursor);
    } catch (error) {
      if (this.#signedOut(error)) return;
      const failure = this.#failure(error, () => {
        failure.remove();
        void this.#loadCommissions(cursor);
      });
      if (more) this.#commissionsBody.append(failure);
      else fill(this.#commissionsBody, failure);
      return;
    }
    if (!more && page.data.length === 0) {
      fill(
        this.#commissionsBody,
        h(
          "p",
          { class: "empty" },
          "No commissions yet. Each payment from a customer you referred earns one, and it appears here as soon as it is recorded.",
        ),
      );
      return;
    }
    let list = this.#commissionsBody.querySelector("ul.commissions");
    if (!list) {
      list = h("ul", { class: "commissions", "aria-label": "Commissions, newest first" });
      fill(this.#commissionsBody, list);
    }
    for (const commission of page.data) list.append(this.#commissionItem(commission));
    this.#commissionsBody.querySelector("button.more")?.remove();
    if (page.pagination.has_more && page.pagination.next_cursor) {
      const next = page.pagination.next_cursor;
      const button = h("button", { type: "button", class: "more" }, "Show older commissions");
      button.addEventListener("click", () => {
        button.disabled = true;
        void this.#loadCommissions(next);
      });
      this.#commissionsBody.append(button);
    }
  }

  #commissionItem(commission: Commission): HTMLElement {
    const details: (string | HTMLElement)[] = [];
    details.push(
      commission.level === 2
        ? `From a sale of an affiliate you recruited (${this.#money(commission.payment_amount_cents)} payment)`
        : `On a ${this.#money(commission.payment_amount_cents)} payment`,
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
        h("span", { class: "amount" }, this.#money(commission.amount_cents)),
        underReview
          ? h("span", { class: "badge pending" }, "Under review")
          : h("span", { class: `badge ${commission.status}` }, commissionStatusText[commission.status]),
        h("time", { datetime: commission.created_at, class: "muted" }, formatDate(commission.created_at)),
      ),
      h("ul", { class: "row-details" }, ...details.map((detail) => h("li", {}, detail))),
    );
  }

  // ───────────────────────────── payouts ─────────────────────────────

  async #loadPayouts(me: Me, cursor?: string) {
    const more = cursor !== undefined;
    let page: Page<Payout>;
    try {
      page = await this.#api.payouts(cursor);
    } catch (error) {
      if (this.#signedOut(error)) return;
      const failure = this.#failure(error, () => {
        failure.remove();
        void this.#loadPayouts(me, cursor);
      });
      if (more) this.#payoutsBody.append(failure);
      else fill(this.#payoutsBody, failure);
      return;
    }
    if (!more && page.data.length === 0) {
      const minimum = me.program.payout_minimum_cents;
      fill(
        this.#payoutsBody,
        h(
          "p",
          { class: "empty" },
          "No payouts yet. Commissions are paid out once their hold has passed" +
            (minimum !== undefined && minimum > 0n ? ` and they add up to at least ${this.#money(minimum)}.` : "."),
        ),
      );
      return;
    }
    let list = this.#payoutsBody.querySelector("ul.payouts");
    if (!list) {
      list = h("ul", { class: "payouts", "aria-label": "Payouts, newest first" });
      fill(this.#payoutsBody, list);
    }
    for (const payout of page.data) list.append(this.#payoutItem(payout));
    this.#payoutsBody.querySelector("button.more")?.remove();
    if (page.pagination.has_more && page.pagination.next_cursor) {
      const next = page.pagination.next_cursor;
      const button = h("button", { type: "button", class: "more" }, "Show older payouts");
      button.addEventListener("click", () => {
        button.disabled = true;
        void this.#loadPayouts(me, next);
      });
      this.#payoutsBody.append(button);
    }
  }

  #payoutItem(payout: Payout): HTMLElement {
    const panelId = `payout-${payout.id}`;
    const when = payout.paid_at ? `paid ${formatDate(payout.paid_at)}` : `created ${formatDate(payout.created_at)}`;
    const toggle = h(
      "button",
      {
        type: "button",
        class: "payout-toggle",
        "aria-expanded": "false",
        "aria-controls": panelId,
        "aria-label": `Payout of ${this.#money(payout.amount_cents)}, ${payoutStatusText[payout.status].toLowerCase()}, ${when}: show its lines`,
      },
      h("span", { class: "amount" }, this.#money(payout.amount_cents)),
      h("span", { class: `badge ${payout.status}` }, payoutStatusText[payout.status]),
      h(
        "span",
        { class: "muted" },
        `${when} · ${payout.commission_count} ${payout.commission_count === 1 ? "commission" : "commissions"}`,
      ),
      payout.adjustment_cents < 0n
        ? h("span", { class: "clawback-note" }, `includes ${this.#money(payout.adjustment_cents)} clawback`)
        : null,
    );
    // The list carries each payout's lines: opening one asks nothing more of the API.
    const panel = h("div", { id: panelId, class: "payout-lines", hidden: true }, this.#payoutLines(payout));
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      panel.hidden = !open;
    });
    return h("li", { class: "payout", "data-payout": payout.id }, toggle, panel);
  }

  #payoutLines(payout: Payout): HTMLElement {
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
        h("td", { class: "amount" }, this.#money(line.amount_cents)),
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
        h("tr", {}, h("th", { scope: "row" }, "Total"), h("td", { class: "amount" }, this.#money(payout.amount_cents))),
      ),
    );
  }
}

function loading(text: string): HTMLElement {
  return h("p", { class: "muted loading" }, text);
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
