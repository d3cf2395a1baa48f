import { z } from "zod";
import { commissionStatusSchema } from "./commissions.js";
import { emailSchema, errorSchema, text } from "./common.js";

export const missingStrategyMessage = "Provide one of commission_id, external_id, or email plus payment_amount_cents";
export const severalStrategiesMessage =
  "Provide only one of commission_id, external_id, or email plus payment_amount_cents";
export const keyMismatchMessage =
  "The Idempotency-Key header and the body's idempotency_key differ; send the key once, or the same key in both";

/** An idempotency key as the body or the header carries it (spec 4.9, 8). */
export const idempotencyKeySchema = text({ min: 1, max: 128 });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * POST /api/v1/refunds (spec 4.9). Each field is checked on its own; the identification rule
 * (exactly one of commission_id, external_id, email plus payment_amount_cents) is checked on what
 * was sent even when a field is also invalid, so one answer names every problem. Whether the
 * amount fits the payment needs the payment: that is the ledger's 422. Unknown fields are ignored.
 */
export const refundBodySchema = z
  .object({
    commission_id: text({ min: 1, max: 128 }).optional().meta({ description: "The commission id (com_…)." }),
    external_id: text({ min: 1, max: 255 })
      .optional()
      .meta({ description: "The merchant's own transaction id of the payment, as sent to POST /events." }),
    email: emailSchema.optional().meta({
      description:
        "Fallback: the paying customer's email (trimmed and lowercased), with payment_amount_cents. Live payments are searched newest first; several matches answer 409 ambiguous_payment.",
      override: { format: "email" },
    }),
    payment_amount_cents: z
      .int()
      .optional()
      .meta({ description: "Required with email: exactly the original payment's amount." }),
    refund_amount_cents: z.int().optional().meta({
      description:
        "The incremental refund in cents, not the cumulative total. Omitted: whatever remains of the payment (a full refund). Must be > 0 and at most the payment, else 422.",
    }),
    reason: text({ max: 500 })
      .optional()
      .meta({ description: "Stored on the commission and sent in the affiliate's email; at most 500 characters." }),
    idempotency_key: idempotencyKeySchema.optional().meta({
      description:
        "1-128 characters, scoped to the product, kept 30 days. May be sent as the Idempotency-Key header instead; when both are sent they must be equal.",
    }),
  })
  .superRefine(
    (body, context) => {
      const has = (value: unknown) => value !== undefined;
      const byEmail = has(body.email) || has(body.payment_amount_cents);
      const count = [has(body.commission_id), has(body.external_id), byEmail].filter(Boolean).length;
      if (count > 1) {
        context.addIssue({ code: "custom", path: [], message: severalStrategiesMessage });
      } else if (count === 0 || (byEmail && !(has(body.email) && has(body.payment_amount_cents)))) {
        context.addIssue({ code: "custom", path: [], message: missingStrategyMessage });
        if (has(body.email)) {
          context.addIssue({ code: "custom", path: ["payment_amount_cents"], message: "Required with email" });
        } else if (has(body.payment_amount_cents)) {
          context.addIssue({ code: "custom", path: ["email"], message: "Required with payment_amount_cents" });
        }
      }
    },
    // Also when a field is invalid, as long as the body is an object.
    { when: (payload) => isObject(payload.value) },
  )
  .meta({ id: "RefundRequest" });

/** The request headers the refund reads; Fastify hands them over lowercased. */
export const refundHeadersSchema = z.object({
  "Idempotency-Key": idempotencyKeySchema.optional().meta({
    description: "The idempotency key, instead of (or equal to) the body's idempotency_key.",
  }),
});

export const refundResultSchema = z
  .object({
    commission_id: z.string().meta({ description: "The payment's level-1 commission." }),
    partnership_id: z.string(),
    payment_amount_cents: z.int().meta({ description: "The original payment." }),
    refund_amount_cents: z.int().meta({ description: "What this request refunded." }),
    previous_commission_cents: z.int().meta({ description: "The commission's amount before this refund." }),
    new_commission_cents: z.int().meta({ description: "The commission's amount after this refund." }),
    status: commissionStatusSchema.meta({
      description:
        "The commission's status after the refund: refunded once the payment is fully refunded, otherwise unchanged (a rejected commission stays rejected).",
    }),
    fully_refunded: z.boolean().meta({ description: "True when the payment's refunded total equals the payment." }),
  })
  .meta({ id: "RefundResult" });

export const refundResponseSchema = z.object({ data: refundResultSchema });

/** 409: the payment is already fully refunded. */
export const alreadyRefundedErrorSchema = z
  .object({
    error: z.string().meta({ example: "Commission com_01hzy3v9k4 is already fully refunded" }),
    details: z.object({ commission_id: z.string() }),
  })
  .meta({ id: "AlreadyRefundedError" });

/** 409: the email and amount match several payments. */
export const ambiguousPaymentErrorSchema = z
  .object({
    error: z.literal("ambiguous_payment"),
    details: z.object({ message: z.string() }),
  })
  .meta({ id: "AmbiguousPaymentError" });

/** 422: the refund amount is not > 0, above the payment, or above what remains of it. */
export const refundOutOfRangeErrorSchema = z
  .object({
    error: z.string().meta({ example: "refund_amount_cents must be greater than 0 and at most the payment amount" }),
    details: z.object({
      payment_amount_cents: z.int().meta({ description: "The original payment." }),
      refundable_cents: z
        .int()
        .optional()
        .meta({ description: "What remains of the payment after earlier refunds, when that is what was exceeded." }),
    }),
  })
  .meta({ id: "RefundOutOfRangeError" });

/** Every 409 body of a refund: already refunded, ambiguous, or an idempotency key conflict (`{ error }`). */
export const refundConflictSchema = z.union([alreadyRefundedErrorSchema, ambiguousPaymentErrorSchema, errorSchema]);

export type RefundBody = z.output<typeof refundBodySchema>;
export type PublicRefundResult = z.output<typeof refundResultSchema>;
