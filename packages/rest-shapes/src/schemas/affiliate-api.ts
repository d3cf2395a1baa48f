/**
 * Affiliate access (contract section 14): the tokens a merchant mints for one partnership, and
 * what the affiliate API answers with them. Every answer is one partnership's own data.
 */
import { z } from "zod";
import { commissionRuleSchema, commissionStatusSchema } from "./commissions.js";
import { centsSumSchema, emailSchema, idParamsSchema, pageQueryShape, paginationSchema, text } from "./common.js";
import { payoutStatusSchema } from "./payouts.js";
import { periodSchema, timeseriesPointSchema } from "./stats.js";

export const tokenTtlSeconds = { min: 60, max: 86_400, default: 3600 } as const;

export const mintTokenBodySchema = z
  .object({
    ttl_seconds: z
      .int()
      .min(tokenTtlSeconds.min)
      .max(tokenTtlSeconds.max)
      .default(tokenTtlSeconds.default)
      .meta({ description: "How long the token works, 60-86400 seconds (default 3600)." }),
  })
  // No body, or `{}`, is the default lifetime.
  .prefault({})
  .meta({ id: "MintAffiliateTokenRequest" });

export const affiliateTokenSchema = z
  .object({
    token: z.string().meta({
      description: "The bearer token (apt_…), shown only here: hand it to the affiliate's browser.",
      example: "apt_Xq3…",
    }),
    expires_at: z.iso.datetime().meta({ description: "When it stops working (ISO 8601 UTC)." }),
  })
  .meta({ id: "AffiliateToken" });

export const affiliateTokenResponseSchema = z.object({ data: affiliateTokenSchema });

export const revokeTokensResponseSchema = z.object({
  data: z.object({
    partnership_id: z.string(),
    revoked_count: z.int().min(0).meta({ description: "Tokens that were still live." }),
  }),
});

/** The rule that applies to the partnership's next payments: the program's, or its own override. */
export const affiliateRuleSchema = z
  .object({
    source: z.enum(["program", "partnership"]).meta({
      description: "Whether these are the program's settings or terms the merchant set for this affiliate.",
    }),
    commission_type: z.enum(["percent", "flat"]),
    commission_rate_bps: z.int().min(0).max(10_000).nullable().meta({ description: "Percent only: basis points." }),
    commission_flat_cents: z.int().min(0).nullable().meta({ description: "Flat only: cents per payment." }),
    tier2_rate_bps: z
      .int()
      .min(0)
      .max(10_000)
      .meta({ description: "What this affiliate earns on the payments of affiliates it recruited." }),
    max_commission_months: z
      .int()
      .min(1)
      .nullable()
      .meta({ description: "A customer's payments earn for this many months; null: for the customer's lifetime." }),
    max_commission_payments: z
      .int()
      .min(1)
      .nullable()
      .meta({ description: "A customer's first payments that earn; null: every payment." }),
  })
  .meta({ id: "AffiliateRule" });

export const affiliateMeSchema = z
  .object({
    partnership_id: z.string(),
    status: z.literal("active").meta({ description: "Always active: a token dies with the partnership's status." }),
    referral_code: z.string(),
    referral_link: z
      .string()
      .nullable()
      .meta({ description: "The program's link template with this code in it; null when the program set none." }),
    joined_at: z.iso.datetime(),
    affiliate: z.object({ name: z.string(), email: z.string() }),
    program: z.object({
      name: z.string(),
      currency: z.string().meta({ description: "Every _cents value is in it." }),
      hold_days: z.int().min(0).meta({ description: "Days a commission is held before it can be paid." }),
      payout_minimum_cents: z.int().min(0),
    }),
    rule: affiliateRuleSchema,
  })
  .meta({ id: "AffiliateMe" });

export const affiliateMeResponseSchema = z.object({ data: affiliateMeSchema });

const count = z.int().min(0);
const affiliateMetricsShape = {
  clicks: count.meta({ description: "Live clicks on this affiliate's code." }),
  signups: count.meta({ description: "Live signups attributed to this affiliate." }),
  conversions: count.meta({ description: "Live payments attributed to this affiliate." }),
  revenue_cents: centsSumSchema.meta({ description: "The amounts of those payments." }),
  commissions_cents: centsSumSchema.meta({
    description:
      "Current amounts of this affiliate's commissions (both levels: its own payments, and its recruits' as a sponsor) from payments in the window, rejected excluded.",
  }),
};

export const affiliateStatsSchema = z
  .object({
    period: periodSchema.meta({ description: "The requested period, echoed." }),
    ...affiliateMetricsShape,
    conversion_rate: z.number().min(0).meta({ description: "conversions / clicks; 0 when there are no clicks." }),
    previous_period: z
      .object(affiliateMetricsShape)
      .meta({ description: "The same metrics for the window of equal length just before this one." }),
    timeseries: z
      .array(timeseriesPointSchema)
      .meta({ description: "One point per UTC date of the period, oldest first, ending today; quiet days are zeros." }),
  })
  .meta({ id: "AffiliateStats" });

export const affiliateStatsResponseSchema = z.object({ data: affiliateStatsSchema });

export const affiliateCommissionSchema = z
  .object({
    id: z.string(),
    status: commissionStatusSchema,
    level: z.int().min(1).max(2).meta({ description: "1: a payment this affiliate referred; 2: a recruit's." }),
    amount_cents: z.int().meta({ description: "Current value: reduced by partial refunds, 0 after a full one." }),
    payment_amount_cents: z.int(),
    hold_until: z.iso.datetime(),
    hold_reason: z.string().nullable().meta({
      description:
        'Why the merchant holds it beyond hold_until: `"review"` while it is under review (the merchant decides whether it is paid); null when not held.',
    }),
    created_at: z.iso.datetime(),
    payout_id: z.string().nullable(),
    rule: commissionRuleSchema.nullable(),
    refund_reason: z
      .string()
      .nullable()
      .meta({ description: "The reason the merchant gave when the payment was refunded; null when none." }),
    customer: z.string().nullable().meta({
      description: "The customer's email, masked (j***@example.com); null when none or erased.",
      example: "j***@example.com",
    }),
  })
  .meta({ id: "AffiliateCommission" });

export const affiliateCommissionsQuerySchema = z.object({
  status: commissionStatusSchema.optional().meta({ description: "Only commissions in this status." }),
  ...pageQueryShape,
});

export const affiliateCommissionListResponseSchema = z.object({
  data: z.array(affiliateCommissionSchema),
  pagination: paginationSchema,
});

export const payoutLineSchema = z
  .object({
    kind: z.enum(["commission", "adjustment"]),
    id: z.string().meta({ description: "The commission's id, or the adjustment's." }),
    amount_cents: centsSumSchema.meta({ description: "Negative for an adjustment." }),
    description: z.string().meta({ example: "Refund of commission com_01j… (customer cancelled)" }),
  })
  .meta({ id: "PayoutLine" });

export const affiliatePayoutSchema = z
  .object({
    id: z.string(),
    status: payoutStatusSchema,
    amount_cents: centsSumSchema.meta({ description: "Net: the sum of its lines." }),
    adjustment_cents: centsSumSchema.meta({ description: "The sum of its adjustment lines: 0 or negative." }),
    commission_count: count,
    created_at: z.iso.datetime(),
    approved_at: z.iso.datetime().nullable(),
    paid_at: z.iso.datetime().nullable(),
    lines: z.array(payoutLineSchema).meta({
      description:
        "What makes up amount_cents, commissions then adjustments, oldest first; the amounts sum exactly to amount_cents.",
    }),
  })
  .meta({
    id: "AffiliatePayout",
    description: "A payout line by line (contract 14): the list and the single read answer the same shape.",
  });

/** The single read's name for the same shape, kept so that clients naming the type still compile. */
export const affiliatePayoutDetailSchema = affiliatePayoutSchema.meta({ id: "AffiliatePayoutDetail" });

export const affiliatePayoutsQuerySchema = z.object({
  status: payoutStatusSchema.optional().meta({ description: "Only payouts in this status." }),
  ...pageQueryShape,
});

export const affiliatePayoutListResponseSchema = z.object({
  data: z.array(affiliatePayoutSchema),
  pagination: paginationSchema,
});
export const affiliatePayoutResponseSchema = z.object({ data: affiliatePayoutDetailSchema });

export const affiliateCommissionIdParamsSchema = idParamsSchema("Commission id (com_…).");
export const affiliatePayoutIdParamsSchema = idParamsSchema("Payout id (po_…).");

export const affiliateLoginBodySchema = z
  .object({
    product_id: text({ min: 1, max: 128 }).meta({ description: "The program's product id (prd_…)." }),
    email: emailSchema.meta({ description: "The affiliate's email.", override: { format: "email" } }),
  })
  .meta({ id: "AffiliateLoginRequest" });

export const affiliateLoginAcceptedSchema = z
  .object({
    data: z.object({
      status: z.literal("accepted"),
      message: z.string(),
    }),
  })
  .meta({ id: "AffiliateLoginAccepted" });

export const affiliateExchangeBodySchema = z
  .object({ code: text({ min: 1, max: 256 }).meta({ description: "The code of the sign-in link (#code=…)." }) })
  .meta({ id: "AffiliateLoginExchangeRequest" });

export type PublicAffiliateMe = z.output<typeof affiliateMeSchema>;
export type PublicAffiliateRule = z.output<typeof affiliateRuleSchema>;
export type PublicAffiliateCommission = z.output<typeof affiliateCommissionSchema>;
export type PublicAffiliatePayout = z.output<typeof affiliatePayoutSchema>;
export type PublicPayoutLine = z.output<typeof payoutLineSchema>;
