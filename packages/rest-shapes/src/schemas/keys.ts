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
