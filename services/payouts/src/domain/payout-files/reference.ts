/**
 * The payout's reference in a provider's file. PayPal's Customer ID holds at most 30 characters
 * without spaces, and a payout id (`po_` + 32 hex digits) has 35; so the file carries the same
 * 128 bits in Crockford's base 32, prefixed `PO` (28 characters), and an import reads it, or
 * the payout id itself, back to the payout id.
 */
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const payoutIdPattern = /^po_([0-9a-f]{32})$/;
const referencePattern = /^PO([0-9A-HJKMNP-TV-Z]{26})$/;

export function payoutReference(payoutId: string): string {
  const match = payoutIdPattern.exec(payoutId);
  if (!match?.[1]) return payoutId;
  let value = BigInt(`0x${match[1]}`);
  let encoded = "";
  for (let index = 0; index < 26; index++) {
    encoded = alphabet[Number(value & 31n)] + encoded;
    value >>= 5n;
  }
  return `PO${encoded}`;
}

/** The payout id a file's reference names (a reference or a payout id), or undefined. */
export function payoutIdOfReference(reference: string): string | undefined {
  const text = reference.trim();
  if (payoutIdPattern.test(text)) return text;
  const match = referencePattern.exec(text.toUpperCase());
  if (!match?.[1]) return undefined;
  let value = 0n;
  for (const char of match[1]) value = (value << 5n) | BigInt(alphabet.indexOf(char));
  // 26 characters carry 130 bits: the two above 128 must be 0 in a reference this code wrote.
  if (value >> 128n !== 0n) return undefined;
  return `po_${value.toString(16).padStart(32, "0")}`;
}
