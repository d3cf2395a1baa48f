import { loadConfig, rpcServiceConfigShape, secret, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

/** An owner's address (see serviceUrls); empty counts as unset (the owner is not called and not listed). */
const ownerUrl = z
  .string()
  .optional()
  .transform((value) => (value ? value : undefined))
  .pipe(serviceUrls.optional());

export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7104, metricsPort: 9104 }),
  /** The owners of personal data the saga calls (ErasureOwnerService on each one's RPC port). */
  LEDGER_URL: ownerUrl,
  PARTNERS_URL: ownerUrl,
  NOTIFIER_URL: ownerUrl,
  INTEGRATIONS_URL: ownerUrl,
  /**
   * Keys the email hash and seals the email while its erasure runs. Equal on every replica and
   * kept across releases: a new key makes earlier receipts unfindable by email. In production it
   * must be set (see `secret`).
   */
  ERASURE_HASH_KEY: secret("local-development-erasure-hash-key-change-me"),
  /** How often running erasures whose runner is gone (crash, owner outage) are resumed. */
  ERASURE_RESUME_INTERVAL_MS: z.coerce.number().int().min(100).default(10_000),
  /** How long a runner owns an erasure before the resume job may take it over. */
  ERASURE_LEASE_MS: z.coerce.number().int().min(100).default(60_000),
  /** Deadline of one call to an owner (a big customer's erasure is batched, and takes seconds). */
  OWNER_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
};

export type PrivacyConfig = Readonly<z.infer<z.ZodObject<typeof configShape>>>;

export const loadPrivacyConfig = (env: NodeJS.ProcessEnv = process.env): PrivacyConfig => loadConfig(configShape, env);
