import { baseConfigShape, loadConfig, port, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...baseConfigShape,
  RPC_PORT: port(7103),
  RPC_HOST: z.string().default("127.0.0.1"),
  /** Prometheus metrics (GET /metrics), on RPC_HOST; never the RPC port. */
  METRICS_PORT: port(9103),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  LEDGER_URL: serviceUrls.default("http://127.0.0.1:7102"),
  /** Signs page tokens; must be equal on every replica. */
  PAGE_TOKEN_SECRET: z.string().min(16).default("local-development-page-token-secret"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  /** How often payouts are generated for every product (contract 8: daily); 0 turns the schedule off. */
  PAYOUT_INTERVAL_MS: z.coerce.number().int().min(0).default(86_400_000),
};

export const loadPayoutsConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
