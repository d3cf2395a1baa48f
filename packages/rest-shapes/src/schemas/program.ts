import {
  clickSignalActions,
  fraudActions,
  maxCommissionMonthsLimit,
  maxCommissionPaymentsLimit,
  maxFlatCents,
  maxReferralUrlTemplateLength,
  referralUrlTemplateProblem,
} from "@affiliate/contract-rules";
import { z } from "zod";
import { text } from "./common.js";

const bps = z.int().min(0).max(10_000);

const paymentSignalAction = z.enum(fraudActions);
const clickSignalAction = z.enum(clickSignalActions);

/** What each fraud signal does (contract section 18). */
export const fraudSettingsSchema = z
  .object({
    self_referral: paymentSignalAction.meta({
      description:
        "The paying customer is the affiliate: the same email, or the same email domain unless it is a public one (webmail providers, example and test domains). Default `flag`.",
    }),
    refund_rate: paymentSignalAction.meta({
      description:
        "The partnership's refunded share of its payments of the last 30 days is above `refund_rate_threshold_bps`. Checked only with a threshold. Default `flag`.",
    }),
    duplicate_click: clickSignalAction.meta({
      description:
        "The same visitor (or address hash) had a counted click on the same code within the hour before. `flag` (default) records the click as a duplicate, counted nowhere; `off` counts it.",
    }),
    bot: clickSignalAction.meta({
      description:
        "The click's user agent is a crawler, a headless browser or an HTTP library. `flag` (default) records it as a bot click, counted nowhere; `off` counts it.",
    }),
    refund_rate_threshold_bps: z.int().min(1).max(10_000).nullable().meta({
      description: "null (default: refund_rate is not checked) or 1-10000 basis points (2500 = 25%).",
    }),
  })
  .meta({
    id: "FraudSettings",
    description:
      "Per signal: `flag` holds a payment's commissions for review (`hold_reason: review`, `flags`; approved or rejected with POST /api/v1/commissions/{id}/review), `reject` creates them rejected (the payment is recorded), `off` does not check. Click signals take `flag` or `off`.",
  });

/** How a level-1 commission is computed (contract section 12). */
export const commissionTypeSchema = z.enum(["percent", "flat"]).meta({
  description:
    "`percent`: level 1 = payment × `commission_rate_bps` / 10000, rounded half up. `flat`: level 1 = `commission_flat_cents` per attributed payment, at most the payment. Level 2 is always a percentage.",
});
export const commissionFlatCentsSchema = z.int().min(0).max(maxFlatCents).meta({
  description: "The flat level-1 amount per attributed payment, in cents, 0-100,000,000,000; capped at the payment.",
});
export const maxCommissionMonthsSchema = z.int().min(1).max(maxCommissionMonthsLimit).nullable().meta({
  description:
    "null (lifetime) or 1-120: a payment earns only if it occurred less than this many calendar months after the customer's first attributed payment to the same partnership (UTC; a day the month lacks is its last day: Jan 31 + 1 month = Feb 28, or 29 in a leap year).",
});
export const maxCommissionPaymentsSchema = z.int().min(1).max(maxCommissionPaymentsLimit).nullable().meta({
  description:
    "null (unlimited) or 1-1000: only the customer's first this many attributed payments to the same partnership earn.",
});

/** A product's program settings; the writable fields' rules are those of contract section 3. */
export const programSchema = z
  .object({
    product_id: z.string().meta({ description: "Read-only." }),
    name: z.string().meta({ description: "Read-only." }),
    commission_rate_bps: bps.meta({ description: "Level-1 rate in basis points (2000 = 20%), 0-10000." }),
    tier2_rate_bps: bps.meta({ description: "Level-2 (sponsor override) rate in basis points, 0-10000." }),
    hold_days: z.int().min(0).max(365).meta({ description: "Days a commission is held before it can be paid." }),
    payout_minimum_cents: z.int().min(0).meta({ description: "Smallest payout, in cents of `currency`." }),
    attribution_window_days: z
      .int()
      .min(1)
      .max(365)
      .meta({ description: "How long a click attributes a later signup or payment." }),
    auto_approve: z.boolean().meta({ description: "False: new registrations start pending." }),
    currency: z.string().meta({ description: "ISO 4217, lowercase. Read-only.", example: "usd" }),
    commission_type: commissionTypeSchema,
    commission_flat_cents: commissionFlatCentsSchema,
    max_commission_months: maxCommissionMonthsSchema,
    max_commission_payments: maxCommissionPaymentsSchema,
    referral_url_template: text({ max: maxReferralUrlTemplateLength })
      .superRefine((template, context) => {
        const problem = referralUrlTemplateProblem(template);
        if (problem) context.addIssue({ code: "custom", message: problem });
      })
      .nullable()
      .meta({
        description:
          "null or an http(s) URL containing `{code}` (replaced by the affiliate's referral code), shown to affiliates as their link.",
        example: "https://acme.com/?ref={code}",
      }),
    fraud: fraudSettingsSchema,
  })
  .meta({
    id: "Program",
    description:
      "The customer, for the limits: `provider_customer_id`, else `customer_email`; a payment with neither is its own first payment. A payment past a limit is recorded, attributed and counted in stats, and earns nothing (`commission_skipped`).",
  });

const writable = programSchema.shape;

/** The settings a PATCH may not change. */
const readOnlyFields = ["product_id", "name", "currency"] as const;

/**
 * Any subset of the writable fields. A read-only field is known (so a typo of it is not
 * suggested as another field) but refused as a whole-request error; any other field the gateway
 * refuses as unknown, naming the writable field it resembles.
 */
export const updateProgramBodySchema = z
  .object({
    commission_rate_bps: writable.commission_rate_bps.optional(),
    tier2_rate_bps: writable.tier2_rate_bps.optional(),
    hold_days: writable.hold_days.optional(),
    payout_minimum_cents: writable.payout_minimum_cents.optional(),
    attribution_window_days: writable.attribution_window_days.optional(),
    auto_approve: writable.auto_approve.optional(),
    commission_type: writable.commission_type.optional(),
    commission_flat_cents: writable.commission_flat_cents.optional(),
    max_commission_months: writable.max_commission_months.optional(),
    max_commission_payments: writable.max_commission_payments.optional(),
    referral_url_template: writable.referral_url_template.optional(),
    fraud: fraudSettingsSchema.partial().optional().meta({
      description: "Any subset of the fraud settings; the others stay. An unknown signal is refused by name.",
    }),
    ...Object.fromEntries(
      readOnlyFields.map((field) => [field, z.unknown().optional().meta({ description: "Read-only: refused." })]),
    ),
  })
  .superRefine((body, context) => {
    const given = readOnlyFields.filter((field) => (body as Record<string, unknown>)[field] !== undefined);
    if (given.length > 0) {
      context.addIssue({ code: "custom", path: [], message: `Unknown or read-only fields: ${given.join(", ")}` });
    }
  })
  .meta({ id: "UpdateProgramRequest" });

export const programResponseSchema = z.object({ data: programSchema });

export type PublicProgram = z.output<typeof programSchema>;
export type UpdateProgramBody = z.output<typeof updateProgramBodySchema>;
