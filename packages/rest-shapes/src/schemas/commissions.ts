import { z } from "zod";
import { idParamsSchema, pageQueryShape, paginationSchema, text } from "./common.js";

export const commissionStatusSchema = z.enum(["pending", "approved", "paid", "rejected", "refunded"]).meta({
  id: "CommissionStatus",
  description:
    "pending (in its hold period), approved (ready for a payout), paid, rejected (voided by the merchant), refunded.",
});

export type PublicCommissionStatus = z.output<typeof commissionStatusSchema>;

/** Why an attributed payment earned nothing (contract section 12). */
export const commissionSkippedSchema = z.enum(["max_commission_months", "max_commission_payments"]).nullable().meta({
  id: "CommissionSkipped",
  description:
    "Why an attributed payment earned nothing: it occurred `max_commission_months` or more after the customer's first attributed payment to the partnership, or the customer's first `max_commission_payments` payments had already earned. null otherwise.",
});

/** Why a commission is held (contract section 13). */
export const holdReasonSchema = z.enum(["dispute", "review"]).nullable().meta({
  id: "HoldReason",
  description:
    "Why the commission is held: `dispute` while its payment's dispute (a chargeback) is open; `review` while a fraud signal's flag (`flags`) waits for the merchant's decision (`POST /api/v1/commissions/{id}/review`). A held commission keeps its status and amount but is not approved at the end of its hold period and goes into no payout until the hold ends. A dispute won lifts its hold; lost, the payment is refunded in full. A commission already in a payout is never held (a lost dispute claws it back instead). null when not held.",
});

/** A fraud signal raised on a commission or a click, with what raised it (contract section 18). */
export const fraudFlagSchema = z
  .object({
    signal: z.enum(["self_referral", "duplicate_click", "bot", "refund_rate"]),
    evidence: z.record(z.string(), z.union([z.string(), z.number()])).meta({
      description:
        "What was seen, per signal. self_referral: `match` (`email`, `email_domain` with `domain`, or `portal_visitor` with `visitor_id`). duplicate_click: `matched_on` (`visitor_id` or `ip_hash`), `counted_click_id`, `counted_click_at`, `window_minutes`. bot: `user_agent_token`. refund_rate: `window_days`, `payments_cents` and `refunded_cents` (exact, as strings), `refund_rate_bps`, `threshold_bps`.",
    }),
  })
  .meta({ id: "FraudFlag" });

/** The merchant's decision on a flagged commission (contract section 18). */
export const commissionReviewSchema = z
  .object({
    decision: z.enum(["approve", "reject"]),
    note: z.string().meta({ description: "The merchant's note; empty when none was given." }),
    key: z.string().meta({ description: "The API key that decided it, masked.", example: "sk_live_…a1b2" }),
    reviewed_at: z.iso.datetime(),
  })
  .meta({ id: "CommissionReview" });

export type PublicHoldReason = z.output<typeof holdReasonSchema>;

/** The rule a commission was made with, frozen when its payment was recorded (contract section 12). */
export const commissionRuleSchema = z
  .object({
    source: z.enum(["program", "partnership"]).meta({
      description:
        "Whose settings gave the amount: the program's, or the earning partnership's `commission_override` (for level 2: the sponsor's `tier2_rate_bps`).",
    }),
    type: z.enum(["percent", "flat"]).meta({ description: "Level 2 is always percent." }),
    rate_bps: z.int().min(0).max(10_000).nullable().meta({ description: "The rate applied; null for flat." }),
    flat_cents: z
      .int()
      .min(0)
      .nullable()
      .meta({ description: "The flat amount applied before the cap at the payment; null for percent." }),
    payment_number: z.int().min(1).meta({
      description:
        "The payment's number among the customer's attributed payments to the level-1 partnership, counted when recorded (1 = first).",
    }),
    first_payment_at: z.iso.datetime().meta({
      description:
        "When the customer's first attributed payment to the level-1 partnership occurred: the anchor of `max_commission_months`. A refund of that payment does not move it.",
    }),
  })
  .meta({
    id: "CommissionRule",
    description:
      "Frozen at creation: later setting changes never re-rate the commission, and refunds scale its original amount.",
  });

/** How a commission's payment found its partnership (contract section 17). */
export const attributionMethods = ["link", "metadata", "coupon", "visitor", "signup"] as const;
export const commissionAttributionSchema = z.enum(attributionMethods).nullable().meta({
  id: "CommissionAttribution",
  description:
    "How its payment found the partnership: link (a referral code sent with the event, or a checkout's client_reference_id that is a code), metadata (Stripe metadata.referral_code), coupon (a promotion code mapped to the partnership), visitor (the visitor's click: the script, a /r/ link, a visitor_id). A payment credited through the customer's earlier signup carries the signup's method; signup when that signup predates methods being recorded. Null for payments recorded before.",
});

/** A commission exactly as spec section 2.2 lists it, with the rule that made it. */
export const commissionSchema = z
  .object({
    id: z.string().meta({ example: "com_01hzy3v9k4" }),
    amount_cents: z.int().meta({ description: "Current value: reduced by partial refunds, 0 after a full one." }),
    status: commissionStatusSchema,
    level: z.int().min(1).max(2).meta({ description: "1 = direct, 2 = sponsor override (second tier)." }),
    parent_commission_id: z
      .string()
      .nullable()
      .meta({ description: "The level-1 commission of a level-2 row; null otherwise." }),
    hold_until: z.iso.datetime().meta({ description: "End of the hold period (ISO 8601 UTC with milliseconds)." }),
    created_at: z.iso.datetime().meta({ description: "ISO 8601 UTC with milliseconds." }),
    affiliate: z
      .object({ id: z.string(), email: z.string(), name: z.string() })
      .meta({ description: "The affiliate who earns it." }),
    referral_code: z.string().meta({ description: "The earning partnership's referral code." }),
    customer_email: z.string().nullable().meta({ description: "The paying customer; null after erasure or if none." }),
    payment_amount_cents: z.int().meta({ description: "The original payment the commission derives from." }),
    payout_id: z.string().nullable().meta({ description: "The payout holding it; null until it is bundled." }),
    hold_reason: holdReasonSchema,
    rule: commissionRuleSchema
      .nullable()
      .meta({ description: "The rule that made it; null only for commissions created before rules were recorded." }),
    flags: z.array(fraudFlagSchema).meta({
      description:
        "The fraud signals raised when it was created, each with its evidence; empty when none was. A flag set to `flag` holds it for review (`hold_reason: review`), one set to `reject` created it rejected.",
    }),
    review: commissionReviewSchema
      .nullable()
      .meta({ description: "The merchant's decision once flagged; null until decided." }),
    attribution: commissionAttributionSchema,
  })
  .meta({ id: "Commission" });

export const commissionIdParamsSchema = idParamsSchema("Commission id (com_…).");

export const listCommissionsQuerySchema = z.object({
  status: commissionStatusSchema.optional().meta({ description: "Only commissions in this status." }),
  partnership_id: text({ min: 1, max: 128 }).optional().meta({ description: "Only this partnership's." }),
  payout_id: text({ min: 1, max: 128 }).optional().meta({ description: "Only those bundled into this payout." }),
  flagged: z
    .enum(["true", "false"])
    .optional()
    .transform((value) => value === "true")
    .meta({ description: "true: only commissions awaiting review (`hold_reason: review`), the review queue." }),
  ...pageQueryShape,
});

export const updateCommissionBodySchema = z
  .object({
    action: z.enum(["approve", "reject"]).meta({
      description:
        "approve: a pending commission becomes approved (its hold ends early), unless a dispute holds it (`hold_reason`): 400 until the dispute closes. reject: a pending commission, or an approved one not in a payout, becomes rejected, with its level-2 child.",
    }),
    reason: text({ max: 500 }).optional().meta({ description: "Stored on the commission; at most 500 characters." }),
  })
  .meta({ id: "UpdateCommissionRequest" });

export const reviewCommissionBodySchema = z
  .object({
    decision: z.enum(["approve", "reject"]).meta({
      description:
        "approve: the review hold is lifted; the commission is approved at once when its hold period is over, else when it ends (a dispute opened meanwhile keeps it held). reject: rejected, with its level-2 child; the payment stays recorded.",
    }),
    note: text({ max: 500 }).optional().meta({ description: "Why; kept with the decision. At most 500 characters." }),
  })
  .meta({ id: "ReviewCommissionRequest" });

export const commissionResponseSchema = z.object({ data: commissionSchema });
export const commissionListResponseSchema = z.object({
  data: z.array(commissionSchema),
  pagination: paginationSchema,
});

export type PublicCommission = z.output<typeof commissionSchema>;
export type PublicCommissionRule = z.output<typeof commissionRuleSchema>;
export type PublicCommissionSkipped = z.output<typeof commissionSkippedSchema>;
export type UpdateCommissionBody = z.output<typeof updateCommissionBodySchema>;
export type PublicFraudFlag = z.output<typeof fraudFlagSchema>;
