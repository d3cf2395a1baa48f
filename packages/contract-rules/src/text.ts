// The text rules of contract section 11: the RPC servers (@affiliate/platform's refuse-bad-text.ts)
// and the public REST shapes apply the same ones.

/** Without the `u` flag, which would read a surrogate pair as one code point. */
const unpairedSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const badTextMessage = "Must not contain U+0000 or an unpaired surrogate";

/**
 * Whether `value` is text the platform stores (contract section 11, "Bad text"). Refused:
 * U+0000, which Postgres cannot store in text and no name, id or reason needs, and an unpaired
 * UTF-16 surrogate, which is not a character and has no UTF-8 encoding (it would be stored as
 * U+FFFD, silently changed).
 */
export function isCleanText(value: string): boolean {
  return !value.includes("\u0000") && !unpairedSurrogate.test(value);
}

/**
 * The length of `value` in characters (Unicode code points), the unit every length limit of
 * the API is in: "é" and "😀" are one character each, although "😀" is two UTF-16 units.
 */
export function characterCount(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A high surrogate followed by a low one is one character; skip the low half.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
