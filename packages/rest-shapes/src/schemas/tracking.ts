import { z } from "zod";
import {
  commissionRuleSchema,
  commissionSkippedSchema,
  commissionStatusSchema,
  fraudFlagSchema,
} from "./commissions.js";
import { emailSchema, referralCodeSchema, text } from "./common.js";

export const trackingEventTypeSchema = z.enum(["click", "signup", "payment"]).meta({
  id: "TrackingEventType",
  description: "What happened: a referral link was followed, a customer signed up or paid.",
});

/**
 * The largest payment (contract section 5): one billion in the major unit. The limit keeps every
 * total exact: it takes over 90,000 payments at the limit before a sum passes 2^53.
 */
export const maxPaymentCents = 100_000_000_000;
const paymentRangeMessage = "Must be an integer from 1 to 100,000,000,000 cents";

/**
 * A tracking event (contract section 5). The gateway checks each field and the rules that need no
 * state (a click names its referral code, a payment its amount); the ledger checks the rest (the
 * time window of `occurred_at`, fields a click does not accept) and answers the same envelope.
 */
const trackEventShape = {
  type: trackingEventTypeSchema,
  referral_code: referralCodeSchema.optional().meta({
    description: "Required for a click. On a signup or payment, credits that partnership directly.",
    example: "jane-doe",
  }),
  visitor_id: text({ min: 1, max: 128 }).optional().meta({
    description:
      "The visitor's id, 1-128 characters. Generated (vis_…) for a click without one and returned; on a signup or payment, attributes through the visitor's latest click inside the attribution window.",
  }),
  customer_email: emailSchema.optional().meta({
    description: "Signup or payment: the customer's email; trimmed and lowercased before storage.",
    override: { format: "email" },
  }),
  provider_customer_id: text({ min: 1, max: 255 })
    .optional()
    .meta({ description: "Signup or payment: the payment provider's customer id." }),
  amount_cents: z
    .int(paymentRangeMessage)
    .min(1, paymentRangeMessage)
    .max(maxPaymentCents, paymentRangeMessage)
    .optional()
    .meta({ description: "Payment: required, the amount paid in cents, 1 to 100,000,000,000." }),
  external_id: text({ min: 1, max: 255 }).optional().meta({
    description:
      "Payment: the merchant's transaction id, unique per product. A payment with an external_id already recorded answers 200 with the original event.",
  }),
  occurred_at: z.iso
    .datetime({ offset: true })
    .transform((value) => new Date(value))
    .optional()
    .meta({
      description: "ISO 8601 timestamp; defaults to now. At most 5 minutes ahead and 400 days back.",
      example: "2025-01-02T03:04:05.678Z",
    }),
  ip: text({ min: 1, max: 64 }).optional().meta({ description: "The customer's IP address." }),
  user_agent: text({ min: 1, max: 1024 }).optional().meta({ description: "The customer's user agent." }),
};

export const trackEventBodySchema = z
  .object(trackEventShape)
  .superRefine((event, context) => {
    if (event.type === "click" && event.referral_code === undefined) {
      context.addIssue({ code: "custom", path: ["referral_code"], message: "Required for a click" });
    }
    if (event.type === "payment" && event.amount_cents === undefined) {
      context.addIssue({ code: "custom", path: ["amount_cents"], message: "Required for a payment" });
    }
  })
  .meta({ id: "TrackEventRequest" });

export const trackedEventSchema = z
  .object({
    id: z.string().meta({ example: "evt_01hzy3v9k4" }),
    type: trackingEventTypeSchema,
    partnership_id: z.string().nullable().meta({ description: "The partnership credited; null when unattributed." }),
    visitor_id: z.string().nullable(),
    occurred_at: z.iso.datetime().meta({ description: "ISO 8601 UTC with milliseconds." }),
    test_mode: z.boolean().meta({ description: "True for a sandbox event (sent with an sk_test_ key)." }),
    commissions: z
      .array(
        z.object({
          id: z.string().nullable().meta({ description: "null in sandbox: nothing was created." }),
          level: z.int().min(1).max(2).meta({ description: "1 = direct, 2 = sponsor override." }),
          amount_cents: z.int(),
          status: commissionStatusSchema,
        }),
      )
      .meta({ description: "Created by this payment (live), or that it would create (sandbox)." }),
    commission_skipped: commissionSkippedSchema,
    flags: z.array(fraudFlagSchema).meta({
      description:
        "A click's fraud flags (`duplicate_click`, `bot`): a flagged click is recorded and counted nowhere (stats, partnership clicks). Empty for a counted click and for signups and payments (a payment's flags are on its commissions).",
    }),
  })
  .meta({ id: "TrackedEvent" });

export const trackEventResponseSchema = z.object({ data: trackedEventSchema });

const previewTypeMessage = "A preview is of a payment: type must be payment";

/**
 * POST /api/v1/commissions/preview (contract section 12): a payment as POST /events takes it;
 * `type`, if given, must be `payment`, and `external_id` is ignored.
 */
export const previewCommissionsBodySchema = z
  .object({
    ...trackEventShape,
    type: z.enum(["payment"], previewTypeMessage).optional().meta({ description: "Optional; if given, `payment`." }),
    external_id: trackEventShape.external_id.meta({ description: "Ignored: a preview is never a replay." }),
  })
  .superRefine((payment, context) => {
    if (payment.amount_cents === undefined) {
      context.addIssue({ code: "custom", path: ["amount_cents"], message: "Required for a payment" });
    }
  })
  .meta({ id: "PreviewCommissionsRequest" });

export const previewedCommissionSchema = z.object({
  level: z.int().min(1).max(2).meta({ description: "1 = direct, 2 = sponsor override." }),
  partnership_id: z.string().meta({ description: "The partnership that would earn it." }),
  amount_cents: z.int(),
  rule: commissionRuleSchema,
});

export const previewCommissionsResponseSchema = z
  .object({
    data: z.object({
      partnership_id: z
        .string()
        .nullable()
        .meta({ description: "The partnership the payment would be credited to; null when unattributed." }),
      commissions: z
        .array(previewedCommissionSchema)
        .meta({ description: "What it would earn now, level 1 first; empty when nothing." }),
      commission_skipped: commissionSkippedSchema,
    }),
  })
  .meta({ id: "CommissionPreview" });

/** The most events one POST /events/batch takes (contract section 5a). */
export const maxBatchEvents = 500;

/**
 * The envelope of POST /events/batch. Its events are checked one by one afterwards (each against
 * trackEventBodySchema), so an invalid event fails alone; only a bad envelope fails the request.
 */
export const trackBatchEnvelopeSchema = z.object({
  events: z.array(z.unknown()).min(1).max(maxBatchEvents),
});

/** The request as documented: the envelope whose items are each a POST /events body. */
export const trackBatchBodySchema = z
  .object({
    events: z
      .array(trackEventBodySchema)
      .min(1)
      .max(maxBatchEvents)
      .meta({ description: `1-${maxBatchEvents} events, each exactly a POST /events body; processed in order.` }),
  })
  .meta({ id: "TrackBatchRequest" });

export const trackBatchResultSchema = z
  .object({
    index: z.int().min(0).meta({ description: "The event's position in the request, from 0." }),
    status: z.int().meta({
      description:
        "The status this event would have had alone: 201 recorded, 200 replayed payment, 400 invalid, 404 unknown referral code on a click, 409 recorded concurrently.",
    }),
    data: trackedEventSchema.optional().meta({ description: "On 200 and 201: the event, as POST /events answers it." }),
    error: z.string().optional().meta({ description: "On failure: the error POST /events would have answered." }),
    details: z.record(z.string(), z.unknown()).optional().meta({
      description: "On failure, when POST /events would have had them (e.g. the validation envelope's details).",
    }),
  })
  .meta({ id: "TrackBatchResult" });

export const trackBatchResponseSchema = z
  .object({
    results: z.array(trackBatchResultSchema).meta({ description: "One per event, in request order." }),
    summary: z
      .object({
        total: z.int(),
        recorded: z.int().meta({ description: "Events answered 201." }),
        replayed: z.int().meta({ description: "Payments answered 200: their external_id was already recorded." }),
        failed: z.int().meta({ description: "Events answered with an error; total = recorded + replayed + failed." }),
      })
      .meta({ id: "TrackBatchSummary" }),
  })
  .meta({ id: "TrackBatchResponse" });

export type TrackEventBody = z.output<typeof trackEventBodySchema>;
export type PublicTrackBatchResult = z.output<typeof trackBatchResultSchema>;
export type PublicTrackBatchResponse = z.output<typeof trackBatchResponseSchema>;
export type PublicTrackedEvent = z.output<typeof trackedEventSchema>;
export type PreviewCommissionsBody = z.output<typeof previewCommissionsBodySchema>;
export type PublicCommissionPreview = z.output<typeof previewCommissionsResponseSchema>["data"];
export type PublicTrackingEventType = z.output<typeof trackingEventTypeSchema>;

/**
 * A click the browser script records (contract section 17), with a publishable key: the referral
 * code, the visitor id it keeps, and the page the visitor came from. The gateway adds the user
 * agent and a keyed hash of the address itself; the address is never stored.
 */
export const clickBodySchema = z
  .object({
    referral_code: referralCodeSchema.meta({ description: "The code the landing page's URL carried." }),
    visitor_id: text({ min: 1, max: 128 }).optional().meta({
      description: "The visitor id the script keeps; generated (vis_…) and returned when absent.",
    }),
    referrer: text({ min: 1, max: 2048 }).optional().meta({
      description: "document.referrer of the landing page; only its host is stored.",
    }),
  })
  .meta({ id: "ClickRequest" });
export type ClickBody = z.output<typeof clickBodySchema>;
