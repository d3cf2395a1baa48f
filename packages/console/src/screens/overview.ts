/**
 * Overview: the program's KPIs for a period, each against the period before, and the daily
 * chart of revenue and commissions (contract section 10). Money is exact: bigint cents.
 */

import { dailyChart } from "../chart.js";
import { attempt, type Screen } from "../context.js";
import { fill, h } from "../dom.js";
import { formatCount, formatDay, formatRate, money, type Period, periods } from "../format.js";
import { changeAgainst } from "../money.js";
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
    const previous = periods.find((option) => option.value === chosen)?.previous ?? "previous period";
    const card = (name: string, title: string, value: string, current: bigint, before: bigint | undefined) => {
      const change = before === undefined ? undefined : changeAgainst(current, before);
      return h(
        "div",
        { class: "kpi", "data-kpi": name },
        h("p", { class: "kpi-title" }, title),
        h("p", { class: "kpi-value" }, value),
        change ? h("p", { class: `kpi-change ${change.direction}` }, `${change.text} vs ${previous}`) : null,
      );
    };
    fill(
      cards,
      card("clicks", "Clicks", formatCount(stats.clicks), asBig(stats.clicks), asBig(stats.previous_period.clicks)),
      card(
        "signups",
        "Signups",
        formatCount(stats.signups),
        asBig(stats.signups),
        asBig(stats.previous_period.signups),
      ),
      card(
        "conversions",
        "Conversions",
        formatCount(stats.conversions),
        asBig(stats.conversions),
        asBig(stats.previous_period.conversions),
      ),
      card(
        "revenue",
        "Referred revenue",
        money(stats.revenue_cents, context.currency),
        asBig(stats.revenue_cents),
        asBig(stats.previous_period.revenue_cents),
      ),
      card(
        "commissions",
        "Commissions",
        money(stats.commissions_cents, context.currency),
        asBig(stats.commissions_cents),
        asBig(stats.previous_period.commissions_cents),
      ),
      card("conversion_rate", "Conversion rate", formatRate(stats.conversion_rate), 0n, undefined),
      card("active_affiliates", "Active affiliates", formatCount(stats.active_affiliates), 0n, undefined),
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
