/**
 * Overview: the program's KPIs for a period, each against the period before, and the daily
 * chart of revenue and commissions (contract section 10). Money is exact: bigint cents.
 */

import {
  dailyChart,
  figureCard,
  fill,
  formatCount,
  formatDay,
  formatRate,
  h,
  money,
  type Period,
  periodOf,
  periods,
} from "@affiliate/browser-kit";
import { attempt, type Screen } from "../context.js";
import { StatusLine, section } from "../ui.js";

const asBig = (value: number | bigint) => (typeof value === "bigint" ? value : BigInt(value));

export const overviewScreen: Screen = (context) => {
  const status = new StatusLine();
  const cards = h("div", { class: "kpis" }, h("p", { class: "loading" }, "Loading…"));
  const chart = h("div", { class: "chart-box" });
  let period: Period = "30d";

  const group = h("div", { class: "periods", role: "group", "aria-label": "Period" });
  const buttons = periods.map((option) => {
    const button = h(
      "button",
      { type: "button", class: "secondary", "aria-pressed": String(option.value === period) },
      option.label,
    );
    button.addEventListener("click", () => {
      period = option.value;
      for (const other of buttons) other.setAttribute("aria-pressed", String(other === button));
      void load();
    });
    return button;
  });
  group.append(...buttons);

  const load = async () => {
    const chosen = period;
    const result = await attempt(context, status, () =>
      Promise.all([context.client.stats.get({ period: chosen }), context.client.stats.timeseries({ period: chosen })]),
    );
    if (!result || chosen !== period) return;
    const [{ data: stats }, { data: series }] = result;
    const previous = periodOf(chosen).previous;
    const compared = (current: number | bigint, before: number | bigint) => ({
      current: asBig(current),
      before: asBig(before),
      previous,
    });
    const earlier = stats.previous_period;
    fill(
      cards,
      figureCard({
        key: "clicks",
        title: "Clicks",
        value: formatCount(stats.clicks),
        change: compared(stats.clicks, earlier.clicks),
      }),
      figureCard({
        key: "signups",
        title: "Signups",
        value: formatCount(stats.signups),
        change: compared(stats.signups, earlier.signups),
      }),
      figureCard({
        key: "conversions",
        title: "Conversions",
        value: formatCount(stats.conversions),
        change: compared(stats.conversions, earlier.conversions),
      }),
      figureCard({
        key: "revenue",
        title: "Referred revenue",
        value: money(stats.revenue_cents, context.currency),
        change: compared(stats.revenue_cents, earlier.revenue_cents),
      }),
      figureCard({
        key: "commissions",
        title: "Commissions",
        value: money(stats.commissions_cents, context.currency),
        change: compared(stats.commissions_cents, earlier.commissions_cents),
      }),
      figureCard({ key: "conversion_rate", title: "Conversion rate", value: formatRate(stats.conversion_rate) }),
      figureCard({ key: "active_affiliates", title: "Active affiliates", value: formatCount(stats.active_affiliates) }),
    );
    fill(
      chart,
      h("h3", {}, "Referred revenue per day"),
      dailyChart({
        points: series.map((point) => ({ date: point.date, value: asBig(point.revenue_cents) })),
        title: "Daily referred revenue",
        format: (value) => money(value, context.currency),
        formatDay,
      }),
      h("h3", {}, "Commissions per day"),
      dailyChart({
        points: series.map((point) => ({ date: point.date, value: asBig(point.commissions_cents) })),
        title: "Daily commissions",
        format: (value) => money(value, context.currency),
        formatDay,
      }),
    );
  };

  void load();
  return h(
    "div",
    { class: "screen" },
    h("h1", {}, "Overview"),
    status.element,
    group,
    section("This period", cards),
    section("Daily", chart),
  );
};
