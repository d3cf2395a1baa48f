import { baseConfigShape, loadConfig, port } from "@affiliate/platform";
import { z } from "zod";

export const configShape = {
  ...baseConfigShape,
  RPC_PORT: port(7101),
  RPC_HOST: z.string().default("127.0.0.1"),
  /** Prometheus metrics (GET /metrics), on RPC_HOST; never the RPC port. */
  METRICS_PORT: port(9101),
  /** Signs page tokens; must be equal on every replica. */
  PAGE_TOKEN_SECRET: z.string().min(16).default("local-development-page-token-secret"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
};

export type PartnersConfig = ReturnType<typeof loadPartnersConfig>;
export const loadPartnersConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
