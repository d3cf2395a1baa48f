import { z } from "zod";
import { partnershipSchema } from "./affiliates.js";
import { commissionSchema } from "./commissions.js";
import { idParamsSchema, pageQueryShape, paginationSchema, text } from "./common.js";
import { payoutSchema } from "./payouts.js";
import { refundResultSchema } from "./refunds.js";

/** The public event types of contract section 9. */
export const webhookEventTypes = [
  "partnership.created",
  "partnership.reactivated",
  "partnership.removed",
  "commission.created",
  "commission.approved",
  "commission.rejected",
  "commission.refunded",
  "commission.flagged",
  "commission.reviewed",
  "payout.created",
  "payout.approved",
  "payout.rejected",
  "payout.completed",
  "customer.erased",
] as const;

export const webhookEventTypeSchema = z.enum(webhookEventTypes).meta({ id: "WebhookEventType" });
export type PublicWebhookEventType = z.output<typeof webhookEventTypeSchema>;

/** Sent by a test delivery and the recovery probe; never subscribed to, always delivered. */
export const webhookTestEventType = "webhook.test";

const urlSchema = text({ min: 1, max: 2048 }).meta({
  description: "http(s) URL; private, loopback and link-local targets are refused.",
});

export const createWebhookBodySchema = z
  .object({
    url: urlSchema,
    events: z
      .array(webhookEventTypeSchema)
      .min(1)
      .max(webhookEventTypes.length)
      .optional()
      .meta({ description: "Event types to receive; every type when omitted." }),
  })
  .meta({ id: "CreateWebhookRequest" });

export const updateWebhookBodySchema = z
  .object({
    url: urlSchema.optional(),
    events: z.array(webhookEventTypeSchema).min(1).max(webhookEventTypes.length).optional(),
    enabled: z.boolean().optional().meta({ description: "false disables (reason merchant); true enables again." }),
  })
  .meta({ id: "UpdateWebhookRequest" });

export const recoverBodySchema = z
  .object({
    since: z.iso.datetime({ offset: true }).meta({ description: "Failed deliveries created at or after this time." }),
    until: z.iso
      .datetime({ offset: true })
      .optional()
      .meta({ description: "…and before this time; now when omitted." }),
  })
  .meta({ id: "RecoverDeliveriesRequest" });

export const webhookSchema = z
  .object({
    id: z.string().meta({ example: "wh_01hzy3v9k4" }),
    url: z.string(),
    events: z.array(webhookEventTypeSchema),
    enabled: z.boolean(),
    disabled_reason: z
      .enum(["merchant", "failing", "gone"])
      .nullable()
      .meta({ description: "merchant (turned off), failing (no success for 5 days), gone (answered 410)." }),
    failing_since: z.iso.datetime().nullable().meta({ description: "First failure since the last success." }),
    created_at: z.iso.datetime(),
  })
  .meta({ id: "Webhook" });

export const createdWebhookSchema = webhookSchema
  .extend({
    secret: z.string().meta({ description: "whsec_…: the signing secret, shown only here.", example: "whsec_…" }),
  })
  .meta({ id: "CreatedWebhook" });

export const deliverySchema = z
  .object({
    id: z.string().meta({ example: "dlv_01hzy3v9k4" }),
    event_id: z.string().meta({ description: "The body's id and the webhook-id header of every attempt." }),
    event_type: z.string(),
    status: z.enum(["pending", "succeeded", "failed"]),
    attempts: z.int().min(0),
    last_status_code: z.int().nullable(),
    last_error: z.string().nullable().meta({
      description:
        "Why the last attempt got no answer (connection refused, timeout, refused address, TLS); null when it was answered or none was made.",
      example: "connect ECONNREFUSED 203.0.113.7:443",
    }),
    next_attempt_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    payload: z.record(z.string(), z.unknown()).meta({ description: "The body sent: { id, type, created_at, data }." }),
  })
  .meta({ id: "Delivery" });

export const deliveryAttemptSchema = z
  .object({
    attempted_at: z.iso.datetime(),
    status_code: z.int().nullable().meta({ description: "null when no answer came within 15 s." }),
    duration_ms: z.int().min(0),
    error: z
      .string()
      .nullable()
      .meta({ description: "Why no answer came; null when one came.", example: "timeout after 15 s" }),
  })
  .meta({ id: "DeliveryAttempt" });

export const deliveryDetailSchema = deliverySchema
  .extend({ attempts: z.array(deliveryAttemptSchema).meta({ description: "Every attempt, oldest first." }) })
  .meta({ id: "DeliveryDetail" });

export const webhookIdParamsSchema = idParamsSchema("Webhook id (wh_…).");
export const deliveryParamsSchema = z.object({
  id: text({ min: 1, max: 128 }).meta({ description: "Webhook id (wh_…)." }),
  delivery_id: text({ min: 1, max: 128 }).meta({ description: "Delivery id (dlv_…)." }),
});
export const listDeliveriesQuerySchema = z.object({ ...pageQueryShape });

export const webhookResponseSchema = z.object({ data: webhookSchema });
export const webhookListResponseSchema = z.object({ data: z.array(webhookSchema) });
export const createdWebhookResponseSchema = z.object({ data: createdWebhookSchema });
export const rotatedSecretResponseSchema = z.object({ data: z.object({ id: z.string(), secret: z.string() }) });
export const deliveryResponseSchema = z.object({ data: deliverySchema });
export const deliveryDetailResponseSchema = z.object({ data: deliveryDetailSchema });
export const deliveryListResponseSchema = z.object({ data: z.array(deliverySchema), pagination: paginationSchema });
export const recoverResponseSchema = z.object({ data: z.object({ requeued: z.int().min(0) }) });

export type PublicWebhook = z.output<typeof webhookSchema>;
export type PublicDelivery = z.output<typeof deliverySchema>;
export type PublicDeliveryDetail = z.output<typeof deliveryDetailSchema>;

const body = <T extends string>(type: T, data: z.ZodType) =>
  z.object({
    id: z.string().meta({ description: "The event id; also the webhook-id header." }),
    type: z.literal(type),
    created_at: z.iso.datetime(),
    data,
  });

/**
 * Every webhook body by event type, for the OpenAPI document's `webhooks` section: `data` is the
 * resource in the same shape as its GET answer. Keyed by the public types, so a type offered to
 * merchants without its body (or a body of no offered type) fails to build; the notifier's
 * subscriptions are keyed the same way (services/notifier/src/events/payloads.ts).
 */
export const webhookBodies = {
  "partnership.created": body("partnership.created", partnershipSchema),
  "partnership.reactivated": body("partnership.reactivated", partnershipSchema),
  "partnership.removed": body("partnership.removed", partnershipSchema),
  "commission.created": body("commission.created", commissionSchema),
  "commission.approved": body("commission.approved", commissionSchema),
  "commission.rejected": body("commission.rejected", commissionSchema),
  "commission.refunded": body(
    "commission.refunded",
    commissionSchema.extend(refundResultSchema.shape).extend({ reason: z.string().nullable() }),
  ),
  "commission.flagged": body("commission.flagged", commissionSchema),
  "commission.reviewed": body("commission.reviewed", commissionSchema),
  "payout.created": body("payout.created", payoutSchema),
  "payout.approved": body("payout.approved", payoutSchema),
  "payout.rejected": body("payout.rejected", payoutSchema),
  "payout.completed": body("payout.completed", payoutSchema),
  "customer.erased": body(
    "customer.erased",
    z.object({ erasure_id: z.string(), requested_at: z.iso.datetime(), completed_at: z.iso.datetime() }),
  ),
  [webhookTestEventType]: body(webhookTestEventType, z.object({ webhook_id: z.string() })),
} satisfies { [T in PublicWebhookEventType | typeof webhookTestEventType]: z.ZodType };
