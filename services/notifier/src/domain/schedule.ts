/**
 * Contract 9: a failed attempt is retried after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h,
 * 6 h, 12 h and 24 h (each with up to 10% jitter), then the delivery is marked failed.
 */
export const retryDelaysMs = [
  5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
] as const;

/** Contract 9b: an endpoint none of whose attempts succeeded for this long is disabled. */
export const failingDisablesAfterMs = 5 * 24 * 3600 * 1000;

/** Contract 9b: a rotated-out secret keeps signing for this long. */
export const rotationOverlapMs = 24 * 3600 * 1000;

/** Contract 9b: deliveries, their payloads and attempts are kept this long. */
export const deliveryRetentionMs = 30 * 24 * 3600 * 1000;

/**
 * When the attempt after `attempts` failed ones is due, or null when none is left. `retryAfterMs`
 * (a receiver's 429 or 503 Retry-After) is honoured up to the delay of the step after this one,
 * so a receiver can slow the schedule down but never stall it.
 */
export function nextAttemptAt(
  now: Date,
  attempts: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): Date | null {
  const scheduled = retryDelaysMs[attempts - 1];
  if (scheduled === undefined) return null;
  const cap = retryDelaysMs[attempts] ?? scheduled;
  const base = retryAfterMs === undefined ? scheduled : Math.max(scheduled, Math.min(retryAfterMs, cap));
  const jitter = base * 0.1 * random();
  return new Date(now.getTime() + base + jitter);
}

/** Contract 9b: a `failing` endpoint is probed every hour for a day after it was disabled, then daily. */
export function nextProbeAt(now: Date, disabledAt: Date): Date {
  const hour = 3600 * 1000;
  const step = now.getTime() - disabledAt.getTime() < 24 * hour ? hour : 24 * hour;
  return new Date(now.getTime() + step);
}
