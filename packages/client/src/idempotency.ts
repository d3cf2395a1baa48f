import type { OperationId } from "./operations.js";

/**
 * A payment the ledger records once per `external_id`: repeating it answers the payment already
 * recorded (200), so it is safe to repeat after an unknown outcome (contract section 5).
 */
function isPaymentWithExternalId(event: unknown): boolean {
  const { type, external_id } = (event ?? {}) as { type?: unknown; external_id?: unknown };
  return type === "payment" && typeof external_id === "string" && external_id.length > 0;
}

/**
 * Operations whose body alone can make a POST safe to repeat. Only the tracking endpoints: a
 * click, a signup or a payment without `external_id` is recorded again by every repeat, and a
 * batch is safe only when each of its events is.
 */
export const safeToRepeatByBody: Partial<Record<OperationId, (body: unknown) => boolean>> = {
  trackEvent: isPaymentWithExternalId,
  trackEventBatch: (body) => {
    const events = (body as { events?: unknown } | undefined)?.events;
    return Array.isArray(events) && events.length > 0 && events.every(isPaymentWithExternalId);
  },
};

/**
 * A new Idempotency-Key: a random UUID (v4). From getRandomValues, which every runtime the
 * client supports has, also outside secure contexts where randomUUID is missing.
 */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
