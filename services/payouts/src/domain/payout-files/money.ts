/**
 * Amounts as a provider's file writes them: the currency's major unit with its minor digits
 * (`123456` cents of USD -> `1234.56`, of JPY -> `123456`), from the exact bigint, never through
 * a floating-point number.
 */
export function minorDigits(currency: string): number {
  return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2;
}

export function decimalAmount(cents: bigint, currency: string): string {
  const digits = minorDigits(currency);
  const negative = cents < 0n;
  const magnitude = negative ? -cents : cents;
  if (digits === 0) return `${negative ? "-" : ""}${magnitude}`;
  const scale = 10n ** BigInt(digits);
  const fraction = (magnitude % scale).toString().padStart(digits, "0");
  return `${negative ? "-" : ""}${magnitude / scale}.${fraction}`;
}
