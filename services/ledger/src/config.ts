import { baseConfigShape, loadConfig, port, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...baseConfigShape,
  RPC_PORT: port(7102),
  RPC_HOST: z.string().default("127.0.0.1"),
  /** Prometheus metrics (GET /metrics), on RPC_HOST; never the RPC port. */
  METRICS_PORT: port(9102),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  /** Signs page tokens; must be equal on every replica. */
  PAGE_TOKEN_SECRET: z.string().min(16).default("local-development-page-token-secret"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  /** How often the hold sweep runs (the contract asks for at least once a minute). */
  HOLD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(30_000),
  /** How long a partnership's attribution data is trusted without an event saying otherwise. */
  ATTRIBUTION_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
};

export const loadLedgerConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
