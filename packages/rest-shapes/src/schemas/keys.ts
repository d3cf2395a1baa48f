import { z } from "zod";

/**
 * A product's publishable keys (contract section 17): safe in a page, they record clicks and
 * nothing else, so unlike secret keys they can be read again.
 */
export const publishableKeysSchema = z
  .object({
    publishable_key: z.string().meta({ example: "pk_live_Hx3…", description: "Records live clicks." }),
    test_publishable_key: z.string().meta({ example: "pk_test_Q9a…", description: "Records sandbox clicks." }),
    created_at: z.iso.datetime().meta({ description: "When this pair was issued." }),
  })
  .meta({ id: "PublishableKeys" });

export const publishableKeysResponseSchema = z.object({ data: publishableKeysSchema });

/** A partnership's Stripe promotion codes (contract section 17): PUT replaces them all. */
export const couponsBodySchema = z
  .object({
    codes: z
      .array(
        z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "Each code must be 1-64 letters, digits, hyphens or underscores"),
      )
      .max(100, "At most 100 codes per affiliate")
      .meta({
        description:
          "The promotion codes customers type (SPRING20), or their ids (promo_…), compared case-insensitively. An empty list removes the mapping.",
      }),
  })
  .meta({ id: "CouponsRequest" });

export const couponsResponseSchema = z.object({
  data: z.object({
    partnership_id: z.string(),
    codes: z.array(z.string()).meta({ description: "Lowercased, in code order." }),
  }),
});
