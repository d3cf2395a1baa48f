import {
  badTextMessage,
  characterCount,
  isCleanText,
  isValidEmail,
  referralCodePattern,
} from "@affiliate/contract-rules";
import { z } from "zod";
import type { ZodOpenApiResponseObject } from "zod-openapi";

/**
 * A string as every route reads it, from a body, a query, a path or a header: clean text first
 * (no U+0000, no unpaired surrogate; contract section 11), then its length limits, counted in
 * characters (code points) rather than UTF-16 units, so 200 emoji are a 200-character name.
 * Every string schema of the gateway starts here, so no field can forget the rule. The
 * documented minLength and maxLength count characters too, as JSON Schema defines them.
 */
export function text({ min, max }: { min?: number; max?: number } = {}) {
  return z
    .string()
    .check((context) => {
      const value = context.value;
      if (!isCleanText(value)) {
        // Nothing else is worth saying about such a value: later checks and transforms are skipped.
        context.issues.push({ code: "custom", message: badTextMessage, input: value, continue: false });
        return;
      }
      if (min === undefined && max === undefined) return;
      const length = characterCount(value);
      if (max !== undefined && length > max) {
        context.issues.push({ code: "too_big", origin: "string", maximum: max, inclusive: true, input: value });
      }
      if (min !== undefined && length < min) {
        context.issues.push({ code: "too_small", origin: "string", minimum: min, inclusive: true, input: value });
      }
    })
    .meta({
      override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
        if (min !== undefined) jsonSchema.minLength = min;
        if (max !== undefined) jsonSchema.maxLength = max;
      },
    });
}

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

/** A 400 of a route with a body: the envelope, or `{ error }` for a body that is not JSON. */
export const badRequestSchema = z.union([validationErrorSchema, errorSchema]);

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

/**
 * A sum of cents (contract section 11: every total is exact): a JSON integer written digit for
 * digit, whatever its size. Sums travel as 64-bit integers from the database on; the gateway
 * holds them as bigints and its serializer writes them exactly. Past 2^53 − 1 (over 90,000
 * payments at the 100,000,000,000-cent limit) a client whose JSON parser reads numbers as
 * doubles rounds them, so such a client should read these fields as big integers (docs/api.md).
 */
export const centsSumSchema = z.union([z.int(), z.bigint()]).meta({
  override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
    for (const key of Object.keys(jsonSchema)) if (key !== "description") delete jsonSchema[key];
    jsonSchema.type = "integer";
    jsonSchema.format = "int64";
  },
});

export type ErrorBody = z.output<typeof errorSchema>;
export type ValidationErrorBody = z.output<typeof validationErrorSchema>;
export type NestedErrorBody = z.output<typeof nestedErrorSchema>;

/** A referral code as registration and tracking accept it. */
export const referralCodeSchema = text().regex(
  referralCodePattern,
  "Must be 3-50 letters, digits, hyphens or underscores",
);

/** An email as every endpoint takes it: trimmed and lowercased, then checked by the platform's one email rule. */
export const emailSchema = text().trim().toLowerCase().refine(isValidEmail, "Invalid email address");

/** The query parameters every cursor-paginated list takes (spec section 8, contract section 11). */
export const pageQueryShape = {
  cursor: text({ min: 1, max: 2048 }).optional().meta({ description: "`next_cursor` of the previous page." }),
  limit: z.coerce.number().int().min(1).max(100).default(50).meta({ description: "Page size, 1-100." }),
};

/** A resource id in a path; its type prefix is named in the description. */
export const idParamsSchema = (description: string) =>
  z.object({ id: text({ min: 1, max: 128 }).meta({ description }) });

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

/** The Retry-After header of a 429 or a 503. */
export const retryAfterHeader = z.object({
  "Retry-After": z.string().meta({ description: "Seconds to wait before retrying.", example: "1" }),
});

function errorResponse(description: string, headers?: typeof retryAfterHeader): ZodOpenApiResponseObject {
  return {
    description,
    content: { "application/json": { schema: errorSchema } },
    ...(headers ? { headers } : {}),
  };
}

/** Error responses shared by the documented operations, by status. */
export const errorResponses = {
  validation: {
    description: "Validation failed",
    content: { "application/json": { schema: validationErrorSchema } },
  } satisfies ZodOpenApiResponseObject,
  /** For operations with a JSON body: the envelope, or `{ error }` for a body that is not JSON. */
  badRequest: {
    description: "Validation failed, or the body is not valid JSON",
    content: { "application/json": { schema: badRequestSchema } },
  } satisfies ZodOpenApiResponseObject,
  401: errorResponse("Missing x-api-key header, invalid key format, or an invalid or revoked key"),
  403: errorResponse(
    "A test-mode key (sk_test_) was sent to the management API, or a publishable key (pk_live_, pk_test_), which records clicks only",
  ),
  404: errorResponse("Not found in this product"),
  413: errorResponse("Request body over 1 MiB"),
  415: errorResponse("Content type other than application/json"),
  429: errorResponse("Rate limit exceeded for this key", retryAfterHeader),
  503: errorResponse(
    "A service behind the gateway cannot be reached or could not apply the request in time; nothing was applied, retry later",
    retryAfterHeader,
  ),
  504: errorResponse(
    "The outcome is unknown (the connection to a service was lost after the request left): repeat with the same Idempotency-Key, or read the resource, before retrying",
  ),
};

/** The errors every authenticated operation can answer. */
export const authenticatedErrors = {
  401: errorResponses[401],
  403: errorResponses[403],
  429: errorResponses[429],
  503: errorResponses[503],
  504: errorResponses[504],
};

/** What POST /events can answer for its key: test keys are accepted there; publishable keys are 403. */
export const trackingAuthErrors = {
  401: errorResponses[401],
  403: errorResponse("A publishable key (pk_live_, pk_test_) was sent: it records clicks only (POST /events/click)"),
  429: { ...errorResponses[429], description: "Tracking rate limit exceeded for this key" },
  503: errorResponses[503],
  504: errorResponses[504],
};

/** What the click endpoint can answer for its key: any key of the product records clicks. */
export const clickAuthErrors = {
  401: errorResponses[401],
  429: { ...errorResponses[429], description: "Click rate limit exceeded for this address" },
  503: errorResponses[503],
  504: errorResponses[504],
};

/** What an affiliate API operation can answer for its bearer token (contract section 14). */
export const affiliateTokenErrors = {
  401: errorResponse(
    "No bearer token, or one that is unknown, revoked, expired, or whose affiliate is no longer active",
  ),
  429: { ...errorResponses[429], description: "Rate limit exceeded for this token" },
  503: errorResponses[503],
  504: errorResponses[504],
};

/** The errors every operation with a JSON body can answer on top of the authenticated ones. */
export const bodyErrors = {
  413: errorResponses[413],
  415: errorResponses[415],
};
