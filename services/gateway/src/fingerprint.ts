import { createHash } from "node:crypto";

/**
 * JSON with every object's keys sorted (recursively, by UTF-16 code unit) and no whitespace:
 * two parsed bodies that differ only in field order or formatting give the same text. Arrays keep
 * their order; values are written as JSON.stringify writes them.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The refund's request fingerprint (spec 4.9 rules 2-4, RefundRequest.request_fingerprint): the
 * SHA-256 (hex) of the canonical JSON of the body as sent, without `idempotency_key`. Field order,
 * whitespace and where the key travelled (body or header) do not change it; any other
 * difference in the body, unknown fields included, does.
 */
export function requestFingerprint(body: Record<string, unknown>): string {
  const { idempotency_key: _key, ...rest } = body;
  return createHash("sha256").update(canonicalJson(rest)).digest("hex");
}
