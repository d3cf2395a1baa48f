import { createHmac, timingSafeEqual } from "node:crypto";
import { DomainError } from "./errors.js";

/**
 * Opaque, tamper-evident page tokens for keyset pagination. A token names the last item of the
 * previous page and is signed together with its scope (the product and the list's filters),
 * so a token from another product, another filter or a hand-edited one is refused instead of
 * silently returning the wrong page. Keyset positions stay stable under inserts and deletes:
 * no skips, no duplicates.
 */
export class PageTokens {
  constructor(private readonly secret: string) {}

  encode(scope: string, after: string): string {
    const payload = Buffer.from(JSON.stringify({ v: 1, a: after })).toString("base64url");
    return `${payload}.${this.sign(scope, payload)}`;
  }

  /** The position after which the next page starts; invalid tokens are INVALID_ARGUMENT on `cursor`. */
  decode(scope: string, token: string): string {
    const invalid = () =>
      DomainError.invalidField("cursor", "Invalid cursor: pass next_cursor from a previous page unchanged");
    const [payload, signature, extra] = token.split(".");
    if (!payload || !signature || extra !== undefined) throw invalid();
    const expected = Buffer.from(this.sign(scope, payload));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid();
    try {
      const decoded = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { v?: unknown; a?: unknown };
      if (decoded.v !== 1 || typeof decoded.a !== "string") throw invalid();
      return decoded.a;
    } catch {
      throw invalid();
    }
  }

  private sign(scope: string, payload: string): string {
    return createHmac("sha256", this.secret).update(`${scope}\n${payload}`).digest("base64url").slice(0, 32);
  }
}

export interface PageRequest {
  /** 1-100; anything else is INVALID_ARGUMENT on the public field `limit`. */
  pageSize: number;
  /** Empty for the first page. */
  pageToken: string;
}

/**
 * One page of a newest-first list keyed by time-ordered ids: validates the page size, decodes
 * the token against `scope` (the product and the list's filters), fetches one row more than the
 * page to learn whether another page exists, and signs the next token.
 */
export async function keysetPage<T extends { id: string }>(
  pageTokens: PageTokens,
  scope: string,
  request: PageRequest,
  fetch: (afterId: string | undefined, limit: number) => Promise<T[]>,
): Promise<{ items: T[]; nextPageToken: string }> {
  const { pageSize } = request;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw DomainError.invalidField("limit", "Must be an integer from 1 to 100");
  }
  const afterId = request.pageToken ? pageTokens.decode(scope, request.pageToken) : undefined;
  const rows = await fetch(afterId, pageSize + 1);
  const items = rows.slice(0, pageSize);
  const last = items.at(-1);
  return { items, nextPageToken: rows.length > pageSize && last ? pageTokens.encode(scope, last.id) : "" };
}
