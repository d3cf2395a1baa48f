import { loadConfig, pageTokenSecret, rpcServiceConfigShape, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7102, metricsPort: 9102 }),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /** How often the hold sweep runs (the contract asks for at least once a minute). */
  HOLD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(30_000),
  /**
   * How often rollup deltas are folded into the rollups. Readers sum the deltas not yet folded,
   * so a longer interval costs reads, never exactness.
   */
  ROLLUP_FOLD_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  /** How long a partnership's attribution data is trusted without an event saying otherwise. */
  ATTRIBUTION_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
};

export const loadLedgerConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
