import { loadConfig, pageTokenSecret, rpcServiceConfigShape, secret, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7106, metricsPort: 9106 }),
  LEDGER_URL: serviceUrls.default("http://127.0.0.1:7102"),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  /**
   * Keys the encryption (AES-256-GCM) of the stored Stripe secrets. Equal on every replica and
   * kept across releases: another key cannot open the secrets stored under this one.
   */
  INTEGRATIONS_ENCRYPTION_KEY: secret("local-development-integrations-encryption-key"),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /** Where Stripe's API is (reconciliation); tests point it at a local fake. */
  STRIPE_API_BASE: z.string().url().default("https://api.stripe.com"),
  /** How often every connection with an API key is reconciled; 0 = off. */
  STRIPE_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(0).default(3_600_000),
  /** Events applied at once by this replica. */
  APPLY_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(32),
  /** Deadline of one call to the ledger or partners. */
  DOWNSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
};

export type IntegrationsConfig = Readonly<z.infer<z.ZodObject<typeof configShape>>>;

export const loadIntegrationsConfig = (env: NodeJS.ProcessEnv = process.env): IntegrationsConfig =>
  loadConfig(configShape, env);
