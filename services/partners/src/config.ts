import { loadConfig, pageTokenSecret, rpcServiceConfigShape } from "@affiliate/platform";
export const configShape = {
  ...rpcServiceConfigShape({ rpcPort: 7101, metricsPort: 9101 }),
  PAGE_TOKEN_SECRET: pageTokenSecret,
};

export type PartnersConfig = ReturnType<typeof loadPartnersConfig>;
export const loadPartnersConfig = (env: NodeJS.ProcessEnv = process.env) => loadConfig(configShape, env);
