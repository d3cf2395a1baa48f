/** A page of a list as the API answers it: `data`, and `pagination` when the list pages. */
export interface ListPage<Item> {
  data: Item[];
  pagination?: { next_cursor: string | null; has_more: boolean };
}

/**
 * A list of the API, newest first. `await` it for the first page; iterate it (`for await`) for
 * every item of every page, each page fetched when the previous one is used up; `pages()` for
 * page after page.
 */
export class PagedList<Item, Page extends ListPage<Item> = ListPage<Item>>
  implements AsyncIterable<Item>, PromiseLike<Page>
{
  readonly #fetchPage: (cursor: string | undefined) => Promise<Page>;

  constructor(fetchPage: (cursor: string | undefined) => Promise<Page>) {
    this.#fetchPage = fetchPage;
  }

  // biome-ignore lint/suspicious/noThenProperty: awaiting a list gives its first page, as Stripe's lists do
  then<Result1 = Page, Result2 = never>(
    onFulfilled?: ((page: Page) => Result1 | PromiseLike<Result1>) | null,
    onRejected?: ((reason: unknown) => Result2 | PromiseLike<Result2>) | null,
  ): Promise<Result1 | Result2> {
    return this.#fetchPage(undefined).then(onFulfilled, onRejected);
  }

  /** Every page, first to last: follows `next_cursor` until `has_more` is false. */
  async *pages(): AsyncGenerator<Page, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      const next = page.pagination?.has_more ? page.pagination.next_cursor : null;
      if (!next) return;
      cursor = next;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item of every page in one array; for lists known to be small. */
  async toArray(): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
