/**
 * Money arithmetic on integer cents (contract section 3): every computed value is rounded to the
 * nearest cent, halves up, using integer arithmetic only.
 */

/**
 * `a × b / denominator` rounded half up, for non-negative integers. The product is formed in
 * BigInt: a $10M payment times a rate would overflow 2^53 as a double.
 */
export function mulDivRoundHalfUp(a: number, b: number, denominator: number): number {
  if (![a, b, denominator].every(Number.isSafeInteger) || a < 0 || b < 0 || denominator <= 0) {
    throw new RangeError(`cannot compute ${a} × ${b} / ${denominator} in cents`);
  }
  const d = BigInt(denominator);
  return Number((2n * BigInt(a) * BigInt(b) + d) / (2n * d));
}

/** A commission on `paymentCents` at `rateBps` basis points: 1234 at 2000 bps is 247. */
export function commissionAmount(paymentCents: number, rateBps: number): number {
  return mulDivRoundHalfUp(paymentCents, rateBps, 10_000);
}

/**
 * A commission after refunds, always recomputed from the cumulative refunded total:
 * round(original × (payment − refunded) / payment), never by subtracting rounded deltas.
 */
export function amountAfterRefunds(originalCents: number, paymentCents: number, refundedCents: number): number {
  if (refundedCents < 0 || refundedCents > paymentCents) {
    throw new RangeError(`refunded ${refundedCents} outside 0..${paymentCents}`);
  }
  return mulDivRoundHalfUp(originalCents, paymentCents - refundedCents, paymentCents);
}
