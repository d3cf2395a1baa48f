export { type ChartPoint, dailyChart } from "./chart.js";
export { fill, h, svg } from "./dom.js";
export { type Figure, figureCard } from "./figure-card.js";
export {
  formatCount,
  formatDate,
  formatDay,
  formatRate,
  label,
  type Period,
  type PeriodText,
  periodOf,
  periods,
} from "./format.js";
export { type Change, changeAgainst, formatCents, money, scaled } from "./money.js";
export { ownOriginFetch } from "./own-origin-fetch.js";
