/**
 * The merchant console's sessions (contract section 19): a secret key pasted once is exchanged
 * for a short-lived bearer token that the console keeps in memory and sends instead of the key.
 */
import { z } from "zod";

export const consoleSessionTtlSeconds = { min: 300, max: 43_200, default: 28_800 } as const;

export const openConsoleSessionBodySchema = z
  .object({
    ttl_seconds: z
      .int()
      .min(consoleSessionTtlSeconds.min)
      .max(consoleSessionTtlSeconds.max)
      .default(consoleSessionTtlSeconds.default)
      .meta({ description: "How long the session works, 300-43200 seconds (default 28800, 8 hours)." }),
  })
  // No body, or `{}`, is the default lifetime.
  .prefault({})
  .meta({ id: "OpenConsoleSessionRequest" });

export const consoleSessionSchema = z
  .object({
    token: z.string().meta({
      description:
        "The console session token (cst_…), shown only here. Send it as `Authorization: Bearer cst_…` on the management API instead of the key; keep it in memory, never in storage.",
      example: "cst_Xq3…",
    }),
    expires_at: z.iso.datetime().meta({ description: "When it stops working (ISO 8601 UTC)." }),
  })
  .meta({ id: "ConsoleSession" });

export const consoleSessionResponseSchema = z.object({ data: consoleSessionSchema });
