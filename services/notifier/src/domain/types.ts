/** The notifier's records in the domain's words (no proto types here). */

import {
  type PublicWebhookEventType,
  webhookEventTypes,
  webhookTestEventType,
} from "@affiliate/rest-shapes/schemas/webhooks";

/**
 * Public event types of contract section 9 a merchant can subscribe to: the list the REST
 * schemas and the OpenAPI document name, so the notifier cannot accept another.
 */
export const webhookTypes = webhookEventTypes;
export type WebhookEventType = PublicWebhookEventType;

/** Sent by TestWebhook and the recovery probe; never subscribed to, always delivered. */
export const testEventType = webhookTestEventType;

export type DisabledReason = "merchant" | "failing" | "gone";

export interface Endpoint {
  id: string;
  productId: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: DisabledReason | null;
  failingSince: Date | null;
  createdAt: Date;
}

export type DeliveryStatus = "pending" | "succeeded" | "failed";

export interface Delivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  /** Why the last attempt got no answer; null when it was answered or none was made. */
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  payload: WebhookBody;
}

export interface Attempt {
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  /** Why no answer came (the connection's error, "timeout after 15 s"); empty when one came. */
  error: string;
}

/** What a receiver gets: `{ id, type, created_at, data }`, `data` the resource in its REST shape. */
export interface WebhookBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** An email to record with an event, sent once per (event, template, recipient). */
export interface EmailDraft {
  template: "welcome" | "refund_notice" | "affiliate_login";
  recipient: string;
  subject: string;
  text: string;
  html: string;
}
