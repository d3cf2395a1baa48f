import { loadConfig, pageTokenSecret, rpcServiceConfigShape, serviceUrls } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7103, metricsPort: 9103 }),
  PARTNERS_URL: serviceUrls.default("http://127.0.0.1:7101"),
  LEDGER_URL: serviceUrls.default("http://127.0.0.1:7102"),
  PAGE_TOKEN_SECRET: pageTokenSecret,
  /** How often payouts are generated for every product (contract 8: daily); 0 turns the schedule off. */
  PAYOUT_INTERVAL_MS: z.coerce.number().int().min(0).default(86_400_000),
};

export const loadPayoutsConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
