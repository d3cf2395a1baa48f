import { z } from "zod";
import type { ZodOpenApiResponseObject } from "zod-openapi";

/** Every error answer: `{ error, details? }` (spec section 7). */
export const errorSchema = z
  .object({
    error: z.string().meta({ description: "What went wrong, as a sentence.", example: "Route not found" }),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: "Error" });

/** The validation envelope: exactly what `z.flattenError` returns, under `details`. */
export const validationErrorSchema = z
  .object({
    error: z.literal("Validation failed"),
    details: z.object({
      formErrors: z.array(z.string()).meta({ description: "Problems with the request as a whole." }),
      fieldErrors: z
        .record(z.string(), z.array(z.string()))
        .meta({ description: "Problems per field name.", example: { email: ["Invalid email address"] } }),
    }),
  })
  .meta({ id: "ValidationError" });

/**
 * The one exception to the envelope (spec sections 4.5 and 7): an invalid `period` on the stats
 * endpoints answers its error nested under `data`.
 */
export const nestedErrorSchema = z
  .object({
    data: z.object({
      error: z.string().meta({ example: "Invalid period: must be 7d, 30d, 90d or 12m" }),
    }),
  })
  .meta({ id: "NestedError" });

export type ErrorBody = z.output<typeof errorSchema>;
export type ValidationErrorBody = z.output<typeof validationErrorSchema>;
export type NestedErrorBody = z.output<typeof nestedErrorSchema>;

/** A referral code as registration and tracking accept it. */
export const referralCodeSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{3,50}$/, "Must be 3-50 letters, digits, hyphens or underscores");

/** An email as every endpoint takes it: trimmed and lowercased, then checked. */
export const emailSchema = z.string().trim().toLowerCase().pipe(z.email());

/** The query parameters every cursor-paginated list takes (spec section 8, contract section 11). */
export const pageQueryShape = {
  cursor: z.string().min(1).max(2048).optional().meta({ description: "`next_cursor` of the previous page." }),
  limit: z.coerce.number().int().min(1).max(100).default(50).meta({ description: "Page size, 1-100." }),
};

/** A resource id in a path; its type prefix is named in the description. */
export const idParamsSchema = (description: string) =>
  z.object({ id: z.string().min(1).max(128).meta({ description }) });

export const partnershipStatusSchema = z
  .enum(["active", "pending", "rejected", "removed"])
  .meta({ id: "PartnershipStatus", description: "Where the affiliate stands in the program." });

export type PublicPartnershipStatus = z.output<typeof partnershipStatusSchema>;

export const paginationSchema = z
  .object({
    next_cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
    has_more: z.boolean(),
  })
  .meta({ id: "Pagination" });

const retryAfter = z.object({
  "Retry-After": z.string().meta({ description: "Seconds to wait before retrying.", example: "1" }),
});

function errorResponse(description: string, headers?: typeof retryAfter): ZodOpenApiResponseObject {
  return {
    description,
    content: { "application/json": { schema: errorSchema } },
    ...(headers ? { headers } : {}),
  };
}

/** Error responses shared by the documented operations, by status. */
export const errorResponses = {
  400: errorResponse("Malformed JSON or an invalid request for the resource's state"),
  validation: {
    description: "Validation failed",
    content: { "application/json": { schema: validationErrorSchema } },
  } satisfies ZodOpenApiResponseObject,
  /** For operations with a JSON body: the envelope, or `{ error }` for a body that is not JSON. */
  badRequest: {
    description: "Validation failed, or the body is not valid JSON",
    content: { "application/json": { schema: z.union([validationErrorSchema, errorSchema]) } },
  } satisfies ZodOpenApiResponseObject,
  401: errorResponse("Missing x-api-key header, invalid key format, or an invalid or revoked key"),
  403: errorResponse("A test-mode key (sk_test_) was sent to the management API"),
  404: errorResponse("Not found in this product"),
  409: errorResponse("Conflicts with the current state"),
  413: errorResponse("Request body over 1 MiB"),
  415: errorResponse("Content type other than application/json"),
  429: errorResponse("Rate limit exceeded for this key", retryAfter),
  503: errorResponse("A service behind the gateway cannot be reached; retry later", retryAfter),
};

/** The errors every authenticated operation can answer. */
export const authenticatedErrors = {
  401: errorResponses[401],
  403: errorResponses[403],
  429: errorResponses[429],
  503: errorResponses[503],
};

/** What POST /events can answer for its key: test keys are accepted there, so no 403. */
export const trackingAuthErrors = {
  401: errorResponses[401],
  429: { ...errorResponses[429], description: "Tracking rate limit exceeded for this key" },
  503: errorResponses[503],
};

/** The errors every operation with a JSON body can answer on top of the authenticated ones. */
export const bodyErrors = {
  413: errorResponses[413],
  415: errorResponses[415],
};
