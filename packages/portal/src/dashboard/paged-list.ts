/**
 * A list of the affiliate API shown page by page, newest first: the first page fills the body,
 * "Show older …" appends the next. A page that fails says why, with a retry in its place, and
 * keeps the pages already shown; an empty list says what will fill it.
 */
import { fill, h } from "@affiliate/browser-kit";
import { type DashboardContext, failure } from "./section.js";

interface Page<Item> {
  data: Item[];
  pagination: { next_cursor: string | null; has_more: boolean };
}

export interface PagedListOptions<Item> {
  context: DashboardContext;
  body: HTMLElement;
  /** One page, from the cursor of the page before (none for the first). */
  fetchPage(cursor: string | undefined): PromiseLike<Page<Item>>;
  item(item: Item): HTMLElement;
  /** The list's class and its accessible name ("Payouts, newest first"). */
  listClass: string;
  listLabel: string;
  /** The button that asks for the next page. */
  moreLabel: string;
  /** What an empty list says: why it is empty and what will fill it. */
  empty: string;
}

export async function loadPagedList<Item>(options: PagedListOptions<Item>, cursor?: string): Promise<void> {
  const { body, context } = options;
  const more = cursor !== undefined;
  let page: Page<Item>;
  try {
    page = await options.fetchPage(cursor);
  } catch (error) {
    if (context.signedOut(error)) return;
    const failed = failure(error, () => {
      failed.remove();
      void loadPagedList(options, cursor);
    });
    if (more) body.append(failed);
    else fill(body, failed);
    return;
  }
  if (!more && page.data.length === 0) {
    fill(body, h("p", { class: "empty" }, options.empty));
    return;
  }
  let list = body.querySelector(`ul.${options.listClass}`);
  if (!list) {
    list = h("ul", { class: options.listClass, "aria-label": options.listLabel });
    fill(body, list);
  }
  for (const item of page.data) list.append(options.item(item));
  body.querySelector("button.more")?.remove();
  const next = page.pagination.has_more ? page.pagination.next_cursor : null;
  if (next) {
    const button = h("button", { type: "button", class: "more" }, options.moreLabel);
    button.addEventListener("click", () => {
      button.disabled = true;
      void loadPagedList(options, next);
    });
    body.append(button);
  }
}
