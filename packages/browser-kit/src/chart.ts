/**
 * The daily chart: one bar per UTC day of the period, drawn as inline SVG (no library, no
 * canvas), its heights computed on integers. Screen readers get a one-sentence summary; each
 * bar carries its date and value as a tooltip.
 */
import { h, svg } from "./dom.js";
import { scaled } from "./money.js";

export interface ChartPoint {
  date: string;
  value: bigint;
}

const barWidth = 10;
const gap = 2;
const height = 100;

export function dailyChart(options: {
  points: ChartPoint[];
  /** What is counted, for the summary: "Daily earnings". */
  title: string;
  format: (value: bigint) => string;
  formatDay: (date: string) => string;
}): HTMLElement {
  const { points, format, formatDay } = options;
  // Math.max takes no bigint.
  let max = 0n;
  let total = 0n;
  for (const point of points) {
    if (point.value > max) max = point.value;
    total += point.value;
  }
  const first = points[0];
  const last = points.at(-1);
  const busiest = points.find((point) => point.value === max && max > 0n);
  const summary =
    first && last
      ? `${options.title} from ${formatDay(first.date)} to ${formatDay(last.date)}: ${format(total)} in total` +
        (busiest ? `, highest ${format(max)} on ${formatDay(busiest.date)}.` : ", none on any day.")
      : `${options.title}: no data.`;
  const width = Math.max(1, points.length * barWidth);
  const bars = points.map((point, index) => {
    const barHeight = point.value > 0n ? Math.max(1, scaled(point.value, max, height)) : 0;
    return svg(
      "rect",
      {
        class: "bar",
        x: index * barWidth + gap / 2,
        y: height - barHeight,
        width: barWidth - gap,
        height: barHeight,
      },
      svg("title", {}, `${formatDay(point.date)}: ${format(point.value)}`),
    );
  });
  const chart = svg(
    "svg",
    {
      class: "chart-svg",
      viewBox: `0 0 ${width} ${height}`,
      preserveAspectRatio: "none",
      role: "img",
      "aria-label": summary,
    },
    svg("line", { class: "baseline", x1: 0, y1: height, x2: width, y2: height }),
    ...bars,
  );
  return h(
    "div",
    { class: "chart" },
    h("p", { class: "chart-top", "aria-hidden": "true" }, max > 0n ? format(max) : ""),
    chart,
    first && last
      ? h(
          "p",
          { class: "chart-axis", "aria-hidden": "true" },
          h("span", {}, formatDay(first.date)),
          h("span", {}, formatDay(last.date)),
        )
      : null,
  );
}
