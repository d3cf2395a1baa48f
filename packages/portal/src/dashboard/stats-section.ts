/**
 * Performance: the period's figures, each against the period before, and the daily chart of
 * earnings, clicks or conversions. Switching period asks the API again; switching what the chart
 * shows does not.
 */
import {
  dailyChart,
  type Figure,
  figureCard,
  fill,
  formatCount,
  formatDay,
  formatRate,
  h,
  periodOf,
  periods,
} from "@affiliate/browser-kit";
import type { Period, Stats } from "../client.js";
import { type DashboardContext, failure, type Section } from "./section.js";

type ChartMetric = "commissions_cents" | "clicks" | "conversions";

const chartMetrics: { value: ChartMetric; label: string; title: string }[] = [
  { value: "commissions_cents", label: "Earnings", title: "Daily earnings" },
  { value: "clicks", label: "Clicks", title: "Daily clicks" },
  { value: "conversions", label: "Conversions", title: "Daily conversions" },
];

type Compared = "clicks" | "signups" | "conversions" | "revenue_cents" | "commissions_cents";

export class StatsSection implements Section {
  readonly body = h("div", { class: "stats-body", "aria-live": "polite" });
  readonly element: HTMLElement;
  readonly #context: DashboardContext;
  readonly #periodButtons: HTMLButtonElement[];
  #period: Period = "30d";
  #chartMetric: ChartMetric = "commissions_cents";
  #stats: Stats | null = null;

  constructor(context: DashboardContext) {
    this.#context = context;
    this.#periodButtons = periods.map((period) => {
      const button = h(
        "button",
        { type: "button", class: "segment", "data-period": period.value, "aria-pressed": "false" },
        period.label,
      );
      button.addEventListener("click", () => this.#switchPeriod(period.value));
      return button;
    });
    this.element = h(
      "section",
      { class: "card", "aria-labelledby": "stats-title" },
      h(
        "div",
        { class: "section-head" },
        h("h2", { id: "stats-title" }, "Performance"),
        h("div", { class: "segments", role: "group", "aria-label": "Period" }, ...this.#periodButtons),
      ),
      this.body,
    );
  }

  async load(): Promise<void> {
    const period = this.#period;
    for (const button of this.#periodButtons) {
      button.setAttribute("aria-pressed", String(button.dataset.period === period));
    }
    this.body.setAttribute("aria-busy", "true");
    try {
      const { data: stats } = await this.#context.client.affiliate.stats({ period });
      // A slower answer for a period since switched away from is dropped.
      if (period !== this.#period) return;
      this.#stats = stats;
      this.#render();
    } catch (error) {
      if (this.#context.signedOut(error) || period !== this.#period) return;
      fill(
        this.body,
        failure(error, () => this.load()),
      );
    } finally {
      if (period === this.#period) this.body.removeAttribute("aria-busy");
    }
  }

  async #switchPeriod(period: Period) {
    if (period === this.#period && this.#stats) return;
    this.#period = period;
    await this.load();
  }

  #render() {
    const stats = this.#stats;
    if (!stats) return;
    const money = this.#context.money;
    const { label, previous } = periodOf(stats.period);
    const compared = (metric: Compared): Figure["change"] => ({
      current: BigInt(stats[metric]),
      before: BigInt(stats.previous_period[metric]),
      previous,
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
        this.#render();
      });
      return button;
    });
    const chosen = chartMetrics.find((metric) => metric.value === this.#chartMetric) ?? chartMetrics[0];
    const isMoney = this.#chartMetric === "commissions_cents";

    fill(
      this.body,
      h(
        "div",
        { class: "kpis" },
        figureCard({ key: "clicks", title: "Clicks", value: formatCount(stats.clicks), change: compared("clicks") }),
        figureCard({
          key: "signups",
          title: "Signups",
          value: formatCount(stats.signups),
          change: compared("signups"),
        }),
        figureCard({
          key: "conversions",
          title: "Conversions",
          value: formatCount(stats.conversions),
          change: compared("conversions"),
        }),
        figureCard({ key: "conversion_rate", title: "Conversion rate", value: formatRate(stats.conversion_rate) }),
        figureCard({
          key: "revenue",
          title: "Revenue referred",
          value: money(stats.revenue_cents),
          change: compared("revenue_cents"),
        }),
        figureCard({
          key: "earnings",
          title: "Earnings",
          value: money(stats.commissions_cents),
          change: compared("commissions_cents"),
        }),
      ),
      quiet
        ? h(
            "p",
            { class: "empty" },
            `No clicks in the last ${label} yet. Share your referral link: every visit through it shows here within a minute.`,
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
        format: isMoney ? money : formatCount,
        formatDay,
      }),
    );
  }
}
