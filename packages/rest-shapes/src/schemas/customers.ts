import { z } from "zod";
import { emailSchema, idParamsSchema } from "./common.js";

const emailField = emailSchema.meta({
  description: "The customer's email; trimmed and lowercased, then matched exactly against stored values.",
  override: { format: "email" },
});

/** DELETE /api/v1/customers (spec 4.11). Unknown fields are ignored. */
export const eraseCustomerBodySchema = z.object({ email: emailField }).meta({ id: "EraseCustomerRequest" });

/** GET /api/v1/customers/erasures?email=… (contract 9a). */
export const listErasuresQuerySchema = z.object({ email: emailField });

export const erasureIdParamsSchema = idParamsSchema("The erasure id (ers_…), from the DELETE answer.");

export const erasureStatusSchema = z
  .enum(["running", "completed"])
  .meta({ id: "ErasureStatus", description: "running until every owner erased and verified; then completed." });

/** The receipt of one erasure (contract 9a). It never contains the email. */
export const erasureSchema = z
  .object({
    id: z.string().meta({ description: "The erasure id (ers_…)." }),
    status: erasureStatusSchema,
    requested_at: z.iso.datetime().meta({ description: "ISO 8601 UTC with milliseconds." }),
    completed_at: z.iso.datetime().nullable().meta({ description: "Null while running." }),
    stores: z
      .array(
        z.object({
          store: z.string().meta({ example: "tracking_events" }),
          records: z.int().meta({ description: "Records this erasure changed in the store; 0 when none matched." }),
        }),
      )
      .meta({ description: "Every store that was searched, by name. While running, the stores done so far." }),
    verified_at: z.iso.datetime().nullable().meta({
      description: "When every owner searched again and found nothing left; null until then.",
    }),
  })
  .meta({ id: "Erasure" });

export const eraseCustomerResponseSchema = z
  .object({
    data: z.object({
      anonymized: z.object({
        tracking_events: z.int().meta({ description: "Tracking events anonymised by this request." }),
        webhook_deliveries: z.int().meta({ description: "Stored webhook payloads rewritten by this request." }),
        affiliate_profiles_scrubbed: z.int().meta({
          description:
            "Affiliate profiles with this email in the product whose country_last_ip was cleared (counted even when already null).",
        }),
      }),
      erasure_id: z.string().meta({ description: "The receipt: GET /api/v1/customers/erasures/{id}." }),
    }),
  })
  .meta({ id: "EraseCustomerResponse" });

/** 503 of a DELETE whose erasure is recorded but did not finish in time: it completes in the background. */
export const erasureRunningErrorSchema = z
  .object({
    error: z.string(),
    details: z.object({ erasure_id: z.string() }),
  })
  .meta({ id: "ErasureRunningError" });

export const erasureResponseSchema = z.object({ data: erasureSchema });
export const erasureListResponseSchema = z.object({ data: z.array(erasureSchema) });

export type PublicErasure = z.output<typeof erasureSchema>;
export type PublicErasureAnswer = z.output<typeof eraseCustomerResponseSchema>["data"];
