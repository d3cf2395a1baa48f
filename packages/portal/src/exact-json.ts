/**
 * The API writes money as JSON integers that may exceed 2^53 (contract section 11). JSON.parse
 * would round them to the nearest double before any code sees them, so every `…_cents` field is
 * read from its source text, as a bigint: exact at any size.
 */

/** What JSON.parse passes a reviver for a primitive in browsers that give the source text. */
interface ReviverContext {
  source?: string;
}

const isCents = (key: string) => key.endsWith("_cents");

export function parseExactJson(text: string): unknown {
  return JSON.parse(text, function revive(this: unknown, key: string, value: unknown, context?: ReviverContext) {
    if (!isCents(key) || typeof value !== "number") return value;
    if (context?.source !== undefined) return BigInt(context.source);
    // A browser without the source text: exact only while the double is.
    if (Number.isSafeInteger(value)) return BigInt(value);
    throw new RangeError(`This browser cannot read the amount ${key} exactly; use a current browser`);
  } as (this: unknown, key: string, value: unknown) => unknown);
}
