import { z } from "zod";
import { centsSumSchema, idParamsSchema, pageQueryShape, paginationSchema, text } from "./common.js";

export const payoutStatusSchema = z.enum(["pending", "approved", "failed", "processing", "completed"]).meta({
  id: "PayoutStatus",
  description:
    "pending (created, awaiting the merchant), approved (ready to transfer), failed (the transfer failed; can be approved again), processing, completed (paid).",
});

export type PublicPayoutStatus = z.output<typeof payoutStatusSchema>;

export const payoutActionSchema = z.enum(["approve", "reject", "mark_paid", "mark_failed"]).meta({
  description:
    "approve: pending or failed -> approved. reject: pending -> deleted (answered as rejected); its commissions and adjustments are free for a later payout. mark_paid: approved -> completed (paid_at set, its commissions paid). mark_failed: approved -> failed.",
});

export type PublicPayoutAction = z.output<typeof payoutActionSchema>;

export const invalidPayoutActionMessage = "Invalid action: must be approve, reject, mark_paid or mark_failed";

/** A payout (spec 2.3, contract section 8). */
export const payoutSchema = z
  .object({
    id: z.string().meta({ example: "po_01hzy3v9k4" }),
    status: z.enum([...payoutStatusSchema.options, "rejected"]).meta({
      description: "A payout status; rejected only in the answer to a reject (the payout no longer exists).",
    }),
    amount_cents: centsSumSchema.meta({
      description: "Net: the linked commissions' current amounts plus the linked adjustments.",
    }),
    adjustment_cents: centsSumSchema.meta({
      description: "The sum of the linked adjustments (clawbacks of refunded paid commissions): 0 or negative.",
    }),
    partnership_id: z.string(),
    affiliate: z
      .object({ id: z.string(), email: z.string(), name: z.string() })
      .meta({ description: "The affiliate paid." }),
    commission_count: z.int().min(0).meta({ description: "How many commissions the payout links." }),
    created_at: z.iso.datetime().meta({ description: "ISO 8601 UTC with milliseconds." }),
    approved_at: z.iso.datetime().nullable().meta({ description: "When it was approved; null until then." }),
    paid_at: z.iso.datetime().nullable().meta({ description: "When it was marked paid; null until then." }),
    gateway_transfer_id: z
      .string()
      .nullable()
      .meta({ description: "The transfer reference given with mark_paid; null when none was given." }),
  })
  .meta({ id: "Payout" });

export const payoutIdParamsSchema = idParamsSchema("Payout id (po_…).");

export const listPayoutsQuerySchema = z.object({
  status: payoutStatusSchema.optional().meta({ description: "Only payouts in this status." }),
  partnership_id: text({ min: 1, max: 128 }).optional().meta({ description: "Only this partnership's." }),
  ...pageQueryShape,
});

/** POST /api/v1/payouts/generate takes no fields: no body, or an empty object. */
export const generatePayoutsBodySchema = z.object({}).optional().meta({ id: "GeneratePayoutsRequest" });

const note = (what: string) => text({ max: 500 }).optional().meta({ description: what });

/**
 * PATCH /api/v1/payouts/:id. An unknown or missing action is not the validation envelope but
 * 400 `{ error }` (spec 7, "Invalid action or payout state"); the route checks it first.
 */
export const updatePayoutBodySchema = z
  .object({
    action: payoutActionSchema,
    reference: note(
      "mark_paid: the transfer reference, stored as gateway_transfer_id. mark_failed: the failure reason. At most 500 characters; ignored by approve and reject.",
    ),
    reason: note(
      "mark_failed: the failure reason (contract section 8), instead of reference. At most 500 characters; ignored by the other actions.",
    ),
  })
  .superRefine((body, context) => {
    if (body.action === "mark_failed" && body.reason !== undefined && body.reference !== undefined) {
      if (body.reason !== body.reference) {
        context.addIssue({
          code: "custom",
          path: ["reason"],
          message: "Give the failure reason once: reason or reference",
        });
      }
    }
  })
  .meta({ id: "UpdatePayoutRequest" });

export const payoutResponseSchema = z.object({ data: payoutSchema });
export const payoutListResponseSchema = z.object({ data: z.array(payoutSchema), pagination: paginationSchema });
export const generatePayoutsResponseSchema = z.object({
  data: z.array(payoutSchema).meta({ description: "The payouts this call created (none when nothing was due)." }),
});

export type PublicPayout = z.output<typeof payoutSchema>;
export type UpdatePayoutBody = z.output<typeof updatePayoutBodySchema>;
