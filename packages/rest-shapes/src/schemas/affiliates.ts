import { maxCommissionMonthsLimit, maxCommissionPaymentsLimit, maxFlatCents } from "@affiliate/contract-rules";
import { z } from "zod";
import {
  centsSumSchema,
  emailSchema,
  idParamsSchema,
  pageQueryShape,
  paginationSchema,
  partnershipStatusSchema,
  referralCodeSchema,
  text,
} from "./common.js";
import { commissionTypeSchema } from "./program.js";

/** The merchant's own id for an affiliate (contract section 14). */
const externalIdSchema = text({ min: 1, max: 128 }).meta({
  description:
    "Your own id for this affiliate (e.g. your user id), 1-128 characters, unique within the program: a taken one is 409.",
  example: "user_4821",
});

const email = emailSchema.meta({
  description: "The affiliate's email; trimmed and lowercased.",
  override: { format: "email" },
});

/** One affiliate to register: the single endpoint's body without `notify`, and each bulk entry. */
export const affiliateRegistrationSchema = z
  .object({
    email,
    name: text({ min: 1, max: 200 }).optional().meta({ description: "Display name, used for a new account." }),
    referralCode: referralCodeSchema
      .optional()
      .meta({ description: "Unique within the product; generated when omitted.", example: "jane-doe" }),
    sponsorReferralCode: text({ min: 1, max: 50 }).optional().meta({
      description:
        "Referral code of an active affiliate of this program who recruited this one; that affiliate earns level-2 commissions.",
    }),
    externalId: externalIdSchema.optional(),
  })
  // Referenced by the bulk body only by name, so render it as the request shape it is.
  .meta({ id: "AffiliateRegistration", unusedIO: "input" });

export const registerAffiliateBodySchema = affiliateRegistrationSchema
  .extend({ notify: z.boolean().default(true).meta({ description: "Send a welcome email." }) })
  .meta({ id: "RegisterAffiliateRequest" });

export const registerAffiliateResponseSchema = z
  .object({
    affiliate: z.object({
      id: z.string(),
      email: z.string(),
      name: z.string(),
      isNew: z.boolean().meta({ description: "True when a new account was created for this email." }),
    }),
    partnership: z.object({ id: z.string(), status: partnershipStatusSchema, referralCode: z.string() }),
  })
  .meta({ id: "RegisterAffiliateResponse" });

export const bulkRegisterBodySchema = z
  .object({
    affiliates: z
      .array(z.unknown())
      .min(1)
      .max(100)
      .meta({
        description:
          "1-100 registrations. Each is validated on its own: an invalid entry is a failed result, the others go on.",
        // Items are checked one by one (an invalid entry fails alone), so the array itself accepts
        // anything; the document still shows what an entry should be.
        override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
          jsonSchema.items = { $ref: "#/components/schemas/AffiliateRegistration" };
        },
      }),
    notify: z.boolean().default(true).meta({ description: "Send welcome emails." }),
  })
  .meta({ id: "BulkRegisterRequest" });

export const bulkActionSchema = z.enum(["created", "joined", "reactivated"]);

export const bulkResultSchema = z
  .discriminatedUnion("success", [
    z.object({
      email: z.string(),
      success: z.literal(true),
      action: bulkActionSchema,
      partnershipId: z.string(),
    }),
    z.object({ email: z.string(), success: z.literal(false), error: z.string() }),
  ])
  .meta({ id: "BulkRegistrationResult" });

export const bulkRegisterResponseSchema = z
  .object({
    results: z.array(bulkResultSchema).meta({ description: "One per entry, in request order." }),
    summary: z
      .object({
        total: z.int().min(0),
        created: z.int().min(0),
        joined: z.int().min(0),
        reactivated: z.int().min(0),
        failed: z.int().min(0),
      })
      .meta({ description: "total = created + joined + reactivated + failed." }),
  })
  .meta({ id: "BulkRegisterResponse" });

export const listAffiliatesQuerySchema = z.object({
  status: partnershipStatusSchema.optional().meta({ description: "Only partnerships in this status." }),
  external_id: text({ min: 1, max: 128 })
    .optional()
    .meta({ description: "Only the partnership with this external id (at most one)." }),
  email: text({ min: 1, max: 320 }).optional().meta({
    description: "Only the partnership of the affiliate with this email (at most one), trimmed and lowercased.",
  }),
  referral_code: text({ min: 1, max: 50 })
    .optional()
    .meta({ description: "Only the partnership with this referral code (at most one), in any case." }),
  ...pageQueryShape,
});

export const partnershipIdParamsSchema = idParamsSchema("Partnership id (ptn_…).");

/**
 * An integer field of the override. Its messages name it: a value error inside an object is
 * reported under the object's name (`fieldErrors.commission_override`), so the message says which
 * field it is about.
 */
const overrideInteger = (field: string, min: number, max: number) => {
  const message = `${field}: Must be an integer from ${min} to ${max.toLocaleString("en-US")}`;
  return z.int(message).min(min, message).max(max, message);
};

/**
 * A partnership's own commission terms (contract section 12): each field given overrides the
 * program's setting for this partnership, each field left out inherits it.
 */
export const commissionOverrideSchema = z
  .object({
    commission_type: z
      .enum(["percent", "flat"], "commission_type: Must be percent or flat")
      .optional()
      .meta({ description: commissionTypeSchema.description }),
    commission_rate_bps: overrideInteger("commission_rate_bps", 0, 10_000)
      .optional()
      .meta({ description: "Level-1 rate in basis points, 0-10000." }),
    commission_flat_cents: overrideInteger("commission_flat_cents", 0, maxFlatCents)
      .optional()
      .meta({ description: "The flat level-1 amount per attributed payment, in cents; capped at the payment." }),
    tier2_rate_bps: overrideInteger("tier2_rate_bps", 0, 10_000)
      .optional()
      .meta({ description: "The level-2 rate this partnership earns as a sponsor, in basis points, 0-10000." }),
    max_commission_months: overrideInteger("max_commission_months", 1, maxCommissionMonthsLimit)
      .nullable()
      .optional()
      .meta({ description: "1-120 calendar months, or null for no limit whatever the program's." }),
    max_commission_payments: overrideInteger("max_commission_payments", 1, maxCommissionPaymentsLimit)
      .nullable()
      .optional()
      .meta({ description: "1-1000 payments per customer, or null for no limit whatever the program's." }),
  })
  .meta({
    id: "CommissionOverride",
    description:
      'Fields given override the program\'s settings for this partnership; fields left out inherit them. An override with `commission_type: "flat"` carries its own `commission_flat_cents` (1 or more). Errors are reported under `commission_override`, each message naming its field.',
  });

export const updatePartnershipBodySchema = z
  .object({
    status: z.enum(["active", "rejected", "removed"]).optional(),
    commission_override: commissionOverrideSchema.nullable().optional().meta({
      description:
        "Replaces the partnership's override as a whole; `null` removes it (the program's settings apply again); `{}` is the same as `null`. Applies to payments recorded afterwards.",
    }),
    external_id: externalIdSchema.nullable().optional().meta({
      description: "Your own id for this affiliate, unique within the program (a taken one is 409); `null` removes it.",
    }),
  })
  .superRefine((body, context) => {
    if (body.status === undefined && body.commission_override === undefined && body.external_id === undefined) {
      context.addIssue({
        code: "custom",
        path: [],
        message: "Give a status, a commission_override or an external_id",
      });
    }
  })
  .meta({ id: "UpdatePartnershipRequest" });

const count = z.int().min(0);

export const partnershipSchema = z
  .object({
    id: z.string().meta({ example: "ptn_01hzy3v9k4" }),
    status: partnershipStatusSchema,
    referral_code: z.string(),
    created_at: z.iso.datetime().meta({ description: "ISO 8601 UTC with milliseconds." }),
    affiliate: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    external_id: z.string().nullable().meta({ description: "Your own id for this affiliate; null when none." }),
    commission_override: commissionOverrideSchema
      .nullable()
      .meta({ description: "The partnership's own commission terms; null when it follows the program's." }),
    stats: z
      .object({ clicks: count, conversions: count, earned_cents: centsSumSchema })
      .meta({ description: "All-time values." }),
  })
  .meta({ id: "Partnership" });

export const partnershipDetailSchema = partnershipSchema
  .extend({
    commissions: z.object({
      pending_count: count,
      approved_count: count,
      pending_amount_cents: centsSumSchema,
      approved_amount_cents: centsSumSchema,
    }),
  })
  .meta({ id: "PartnershipDetail" });

export const partnershipResponseSchema = z.object({ data: partnershipSchema });
export const partnershipDetailResponseSchema = z.object({ data: partnershipDetailSchema });
export const partnershipListResponseSchema = z.object({
  data: z.array(partnershipSchema),
  pagination: paginationSchema,
});

export type PublicPartnership = z.output<typeof partnershipSchema>;
export type PublicCommissionOverride = z.output<typeof commissionOverrideSchema>;
export type UpdatePartnershipBody = z.output<typeof updatePartnershipBodySchema>;
export type PublicPartnershipDetail = z.output<typeof partnershipDetailSchema>;
export type RegisterAffiliateResponseBody = z.output<typeof registerAffiliateResponseSchema>;
export type BulkRegisterResponseBody = z.output<typeof bulkRegisterResponseSchema>;
export type BulkResult = z.output<typeof bulkResultSchema>;
export type BulkAction = z.output<typeof bulkActionSchema>;
