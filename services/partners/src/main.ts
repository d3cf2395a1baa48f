/** The partners process: config -> connections -> RPC server and outbox relay -> close on SIGTERM. */
import { PageTokens, startServiceProcess } from "@affiliate/platform";
import { loadPartnersConfig, payoutSealingKey } from "./config.js";
import { routes, schema } from "./server.js";

const config = loadPartnersConfig();
const service = await startServiceProcess({ name: "partners", config, schema, publishes: true });
const payoutSealing = payoutSealingKey(config.PAYOUT_DETAILS_ENCRYPTION_KEY, {
  version: config.PAYOUT_DETAILS_ENCRYPTION_KEY_VERSION,
  previousSecret: config.PAYOUT_DETAILS_PREVIOUS_ENCRYPTION_KEY,
});
await service.serve({
  routes: routes({ sql: service.sql, pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET), payoutSealing }),
});
