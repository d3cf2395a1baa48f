import { z } from "zod";

const bps = z.int().min(0).max(10_000);

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
  })
  .meta({ id: "Program" });

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
