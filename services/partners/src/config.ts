import {
  loadConfig,
  pageTokenSecret,
  rpcServiceConfigShape,
  SealingKey,
  secret,
  secretMinLength,
} from "@affiliate/platform";
import { z } from "zod";

/** The development value of PAYOUT_DETAILS_ENCRYPTION_KEY (refused in production). */
export const developmentPayoutDetailsKey = "local-development-payout-details-encryption-key";

/**
 * The key that seals affiliates' payout details, from PAYOUT_DETAILS_ENCRYPTION_KEY under
 * PAYOUT_DETAILS_ENCRYPTION_KEY_VERSION, still opening what PAYOUT_DETAILS_PREVIOUS_ENCRYPTION_KEY
 * sealed under the version before.
 */
export function payoutSealingKey(
  secretValue: string = developmentPayoutDetailsKey,
  rotation: { version?: number; previousSecret?: string | undefined } = {},
): SealingKey {
  const version = rotation.version ?? 1;
  if (rotation.previousSecret !== undefined && version < 2) {
    throw new Error(
      "PAYOUT_DETAILS_PREVIOUS_ENCRYPTION_KEY is set: PAYOUT_DETAILS_ENCRYPTION_KEY_VERSION must be 2 or more (the previous key's version plus one)",
    );
  }
  const previous =
    rotation.previousSecret === undefined ? [] : [{ version: version - 1, secret: rotation.previousSecret }];
  return new SealingKey(secretValue, { salt: "affiliate-partners", info: "payout-details" }, { version, previous });
}
export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7101, metricsPort: 9101 }),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /**
   * Keys the encryption (AES-256-GCM) of affiliates' payout details at rest. Equal on every
   * replica and kept across releases: another key cannot open the details stored under this one.
   */
  PAYOUT_DETAILS_ENCRYPTION_KEY: secret(developmentPayoutDetailsKey),
  /**
   * The version byte the details sealed under PAYOUT_DETAILS_ENCRYPTION_KEY carry (1 to 255):
   * a new key takes the next version, so what the previous one sealed still says which key opens it.
   */
  PAYOUT_DETAILS_ENCRYPTION_KEY_VERSION: z.coerce.number().int().min(1).max(255).default(1),
  /** The key before the current one (its version one lower), kept while details it sealed remain. */
  PAYOUT_DETAILS_PREVIOUS_ENCRYPTION_KEY: z.string().min(secretMinLength).optional(),
};

export type PartnersConfig = ReturnType<typeof loadPartnersConfig>;
export const loadPartnersConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
