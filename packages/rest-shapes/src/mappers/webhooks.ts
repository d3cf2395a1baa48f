import { type Delivery, DeliveryStatus, DisabledReason, type Webhook } from "@affiliate/proto/notifier";
import type {
  PublicDelivery,
  PublicDeliveryDetail,
  PublicWebhook,
  PublicWebhookEventType,
} from "../schemas/webhooks.js";
import { ContractViolation, isoTime, isoTimeOrNull } from "./common.js";

const reasons: Record<DisabledReason, PublicWebhook["disabled_reason"]> = {
  [DisabledReason.UNSPECIFIED]: null,
  [DisabledReason.MERCHANT]: "merchant",
  [DisabledReason.FAILING]: "failing",
  [DisabledReason.GONE]: "gone",
};

const statuses: Partial<Record<DeliveryStatus, PublicDelivery["status"]>> = {
  [DeliveryStatus.PENDING]: "pending",
  [DeliveryStatus.SUCCEEDED]: "succeeded",
  [DeliveryStatus.FAILED]: "failed",
};

/** A webhook endpoint in contract 9b's shape; the secret is never part of it. */
export function toPublicWebhook(webhook: Webhook | undefined): PublicWebhook {
  if (!webhook) throw new ContractViolation("webhook missing from the notifier response");
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events as PublicWebhookEventType[],
    enabled: webhook.enabled,
    disabled_reason: reasons[webhook.disabledReason] ?? null,
    failing_since: isoTimeOrNull(webhook.failingSince),
    created_at: isoTime(webhook.createdAt, "webhook.created_at", "notifier"),
  };
}

/** A delivery in contract 9's shape, with its stored body as `payload`. */
export function toPublicDelivery(delivery: Delivery | undefined): PublicDelivery {
  if (!delivery) throw new ContractViolation("delivery missing from the notifier response");
  const status = statuses[delivery.status];
  if (!status) throw new ContractViolation(`delivery status ${delivery.status} has no public name`);
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    status,
    attempts: delivery.attempts,
    last_status_code: delivery.lastStatusCode ?? null,
    last_error: delivery.lastError || null,
    next_attempt_at: isoTimeOrNull(delivery.nextAttemptAt),
    created_at: isoTime(delivery.createdAt, "delivery.created_at", "notifier"),
    payload: JSON.parse(delivery.payloadJson) as Record<string, unknown>,
  };
}

/** A delivery with its attempts (contract 9b, GET …/deliveries/:delivery_id). */
export function toPublicDeliveryDetail(delivery: Delivery | undefined): PublicDeliveryDetail {
  const base = toPublicDelivery(delivery);
  return {
    ...base,
    attempts: (delivery?.attemptLog ?? []).map((attempt) => ({
      attempted_at: isoTime(attempt.attemptedAt, "attempt.attempted_at", "notifier"),
      status_code: attempt.statusCode ?? null,
      duration_ms: Number(attempt.durationMs),
      error: attempt.error || null,
    })),
  };
}
