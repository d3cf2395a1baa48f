import { loadConfig, pageTokenSecret, rpcServiceConfigShape, SealingKey, secret } from "@affiliate/platform";

/** The development value of PAYOUT_DETAILS_ENCRYPTION_KEY (refused in production). */
const developmentPayoutDetailsKey = "local-development-payout-details-encryption-key";

/** The key that seals affiliates' payout details, from PAYOUT_DETAILS_ENCRYPTION_KEY. */
export const payoutSealingKey = (secretValue: string = developmentPayoutDetailsKey) =>
  new SealingKey(secretValue, { salt: "affiliate-partners", info: "payout-details" });
export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7101, metricsPort: 9101 }),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /**
   * Keys the encryption (AES-256-GCM) of affiliates' payout details at rest. Equal on every
   * replica and kept across releases: another key cannot open the details stored under this one.
   */
  PAYOUT_DETAILS_ENCRYPTION_KEY: secret(developmentPayoutDetailsKey),
};

export type PartnersConfig = ReturnType<typeof loadPartnersConfig>;
export const loadPartnersConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
