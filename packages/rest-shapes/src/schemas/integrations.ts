import { z } from "zod";
import { pageQueryShape, paginationSchema, text } from "./common.js";

/** Contract section 13: a product's Stripe connection, without its secrets. */
export const stripeConnectionSchema = z
  .object({
    webhook_path: z.string().meta({
      description: "Paste the gateway's public address + this path into Stripe's dashboard as the endpoint URL.",
      example: "/integrations/stripe/scn_0190…",
    }),
    connected_at: z.iso.datetime(),
    has_api_key: z.boolean().meta({ description: "Whether an API key is stored (reconciliation needs one)." }),
    last_event_at: z.iso.datetime().nullable(),
    events_received: z.int().min(0),
  })
  .meta({ id: "StripeConnection" });

export const connectStripeBodySchema = z
  .object({
    webhook_secret: text({ min: 1, max: 300 }).meta({ description: "The endpoint's signing secret, whsec_…" }),
    api_key: text({ min: 1, max: 300 }).optional().meta({
      description: "A restricted (rk_…) key that can read events, or a secret (sk_…) key; needed by reconciliation.",
    }),
  })
  .meta({ id: "ConnectStripe" });

export const stripeEventOutcomeSchema = z
  .enum(["applied", "ignored", "waiting", "failed"])
  .meta({ id: "StripeEventOutcome", description: "What receiving the event led to." });

export const stripeEventSchema = z
  .object({
    id: z.string().meta({ description: "Stripe's event id (evt_…)." }),
    type: z.string(),
    livemode: z.boolean(),
    received_at: z.iso.datetime(),
    outcome: stripeEventOutcomeSchema,
    detail: z.string().meta({ description: "What happened, or why not." }),
    tracking_event_id: z.string().nullable(),
    commission_ids: z.array(z.string()),
  })
  .meta({ id: "StripeEvent" });

export const listStripeEventsQuerySchema = z.object({
  ...pageQueryShape,
  outcome: stripeEventOutcomeSchema.optional(),
});
export const stripeEventParamsSchema = z.object({ id: text({ min: 1, max: 255 }).meta({ description: "evt_…" }) });
export const reconcileStripeBodySchema = z
  .object({
    since: z.iso
      .datetime()
      .optional()
      .meta({ description: "Default: 24 hours before the last event received; at most 30 days back." }),
  })
  .meta({ id: "ReconcileStripe" });

export const stripeConnectionResponseSchema = z.object({ data: stripeConnectionSchema });
export const stripeEventResponseSchema = z.object({ data: stripeEventSchema });
export const stripeEventListResponseSchema = z.object({
  data: z.array(stripeEventSchema),
  pagination: paginationSchema,
});
export const reconcileStripeResponseSchema = z.object({
  data: z.object({
    fetched: z.int().min(0),
    new: z.int().min(0),
    applied: z.int().min(0),
    failed: z.int().min(0),
  }),
});
export const stripeReceivedSchema = z.object({ received: z.literal(true) });

export type PublicStripeConnection = z.output<typeof stripeConnectionSchema>;
export type PublicStripeEvent = z.output<typeof stripeEventSchema>;
