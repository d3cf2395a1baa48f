/**
 * The scaffold of a list screen: a status filter, and a table of the list's first page with
 * "Show more" for each next one. Loading again (a filter changed, a row's action done) starts
 * from the first page.
 */
import { fill, h, label } from "@affiliate/browser-kit";
import { attempt, type ScreenContext } from "./context.js";
import { actionButton, type StatusLine, select, table } from "./ui.js";

/** "Any status", then each of `statuses` as a word; `value` is "" for any. */
export function statusFilter(id: string, statuses: readonly string[]): HTMLSelectElement {
  const element = select([
    { value: "", text: "Any status" },
    ...statuses.map((value) => ({ value, text: label(value) })),
  ]);
  element.id = id;
  return element;
}

interface Page<Item> {
  data: Item[];
  pagination: { next_cursor: string | null; has_more: boolean };
}

export interface PagedTable {
  /** The table (or what an empty list says) and its "Show more" button. */
  element: HTMLElement;
  /** Loads the first page again, in place of every row shown. */
  load(): Promise<void>;
}

export function pagedTable<Item>(options: {
  context: ScreenContext;
  status: StatusLine;
  headings: string[];
  /** One page, from the cursor of the page before (none for the first); the filters go in here. */
  fetchPage(cursor: string | undefined): PromiseLike<Page<Item>>;
  row(item: Item): HTMLTableRowElement;
  /** What an empty list says, as the filters stand. */
  empty(): string;
}): PagedTable {
  const list = h("div", {}, h("p", { class: "loading" }, "Loading…"));
  let next: string | undefined;
  const show = async (cursor: string | undefined) => {
    const page = await attempt(options.context, options.status, () => options.fetchPage(cursor));
    if (!page) return;
    const rows = page.data.map((item) => options.row(item));
    if (cursor) list.querySelector("tbody")?.append(...rows);
    else fill(list, table(options.headings, rows, options.empty()));
    next = (page.pagination.has_more && page.pagination.next_cursor) || undefined;
    more.hidden = next === undefined;
  };
  const more = actionButton("Show more", () => show(next), { class: "secondary", hidden: true });
  return { element: h("div", { class: "paged-table" }, list, more), load: () => show(undefined) };
}
