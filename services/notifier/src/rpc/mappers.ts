import {
  DeliveryAttemptSchema,
  type Delivery as DeliveryMessage,
  DeliverySchema,
  DeliveryStatus,
  DisabledReason,
  type Webhook as WebhookMessage,
  WebhookSchema,
} from "@affiliate/proto/notifier";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Attempt, Delivery, Endpoint } from "../domain/types.js";

const reasons = {
  merchant: DisabledReason.MERCHANT,
  failing: DisabledReason.FAILING,
  gone: DisabledReason.GONE,
} as const;

const statuses = {
  pending: DeliveryStatus.PENDING,
  succeeded: DeliveryStatus.SUCCEEDED,
  failed: DeliveryStatus.FAILED,
} as const;

export function webhookToProto(endpoint: Endpoint): WebhookMessage {
  return create(WebhookSchema, {
    id: endpoint.id,
    productId: endpoint.productId,
    url: endpoint.url,
    events: endpoint.events,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason ? reasons[endpoint.disabledReason] : DisabledReason.UNSPECIFIED,
    ...(endpoint.failingSince ? { failingSince: timestampFromDate(endpoint.failingSince) } : {}),
    createdAt: timestampFromDate(endpoint.createdAt),
  });
}

export function deliveryToProto(delivery: Delivery & { attemptLog?: Attempt[] }): DeliveryMessage {
  return create(DeliverySchema, {
    id: delivery.id,
    webhookId: delivery.endpointId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    status: statuses[delivery.status],
    attempts: delivery.attempts,
    ...(delivery.lastStatusCode === null ? {} : { lastStatusCode: delivery.lastStatusCode }),
    ...(delivery.lastError === null ? {} : { lastError: delivery.lastError }),
    ...(delivery.nextAttemptAt ? { nextAttemptAt: timestampFromDate(delivery.nextAttemptAt) } : {}),
    createdAt: timestampFromDate(delivery.createdAt),
    payloadJson: JSON.stringify(delivery.payload),
    attemptLog: (delivery.attemptLog ?? []).map((attempt) =>
      create(DeliveryAttemptSchema, {
        attemptedAt: timestampFromDate(attempt.attemptedAt),
        ...(attempt.statusCode === null ? {} : { statusCode: attempt.statusCode }),
        durationMs: BigInt(attempt.durationMs),
        error: attempt.error,
      }),
    ),
  });
}
