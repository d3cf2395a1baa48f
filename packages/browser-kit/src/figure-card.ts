/**
 * A figure of the period in a card (`[data-kpi=…]`), with its change against the period before
 * when it has one. A card without a change keeps the line, empty, so the cards of a row align.
 */
import { h } from "./dom.js";
import { changeAgainst } from "./money.js";

export interface Figure {
  /** What the figure is, for tests and styles: `data-kpi`. */
  key: string;
  title: string;
  /** The figure as written for a reader. */
  value: string;
  /** The same figure now and in the period before, as integers, and how that period is named. */
  change?: { current: bigint; before: bigint; previous: string };
}

export function figureCard({ key, title, value, change }: Figure): HTMLElement {
  const delta = change ? changeAgainst(change.current, change.before) : null;
  return h(
    "div",
    { class: "kpi", "data-kpi": key },
    h("h3", { class: "kpi-title" }, title),
    h("p", { class: "kpi-value" }, value),
    delta && change
      ? h(
          "p",
          { class: `kpi-change ${delta.direction}` },
          h("span", { class: "kpi-delta" }, delta.text),
          ` vs ${change.previous}`,
        )
      : h("p", { class: "kpi-change flat" }, "\u00a0"),
  );
}
