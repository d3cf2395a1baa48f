/**
 * The integrations process: config -> connections -> RPC server, the apply worker, the hourly
 * reconciliation -> close on SIGTERM.
 */

import { createRpcTransport, PageTokens, SealingKey, startPeriodicJob, startServiceProcess } from "@affiliate/platform";
import { LedgerService } from "@affiliate/proto/ledger";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadIntegrationsConfig } from "./config.js";
import { providerCustomers } from "./domain/provider-customers.js";
import { reconcileStripe } from "./domain/reconcile.js";
import { stripeCustomer } from "./providers/stripe/customers-api.js";
import { stripeEventsSince } from "./providers/stripe/events-api.js";
import { commandOf } from "./providers/stripe/map-event.js";
import { stripeEventSchema } from "./providers/stripe/payloads.js";
import { ledgerOver, programsOver } from "./rpc/downstream.js";
import { routes, schema } from "./server.js";
import { connectionsWithApiKey } from "./store/connections.js";
import { startApplyWorker } from "./worker.js";

const config = loadIntegrationsConfig();
const { logger, sql, serve } = await startServiceProcess({ name: "integrations", config, schema, publishes: false });

const transportOptions = { timeoutMs: config.DOWNSTREAM_TIMEOUT_MS };
const ledger = ledgerOver(createClient(LedgerService, createRpcTransport(config.LEDGER_URL, transportOptions)));
const programs = programsOver(createClient(PartnersService, createRpcTransport(config.PARTNERS_URL, transportOptions)));
const clock = () => new Date();
const sealing = new SealingKey(config.INTEGRATIONS_ENCRYPTION_KEY, {
  salt: "affiliate-integrations",
  info: "connection-secrets",
});
const deps = {
  sql,
  sealing,
  clock,
  logger,
  pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET),
  eventsSince: (apiKey: string, since: Date) =>
    stripeEventsSince({ apiBase: config.STRIPE_API_BASE, apiKey, since, timeoutMs: config.DOWNSTREAM_TIMEOUT_MS }),
};

const worker = startApplyWorker({
  sql,
  ledger,
  programs,
  clock,
  logger,
  concurrency: config.APPLY_CONCURRENCY,
  commandOf: (payload) => commandOf(stripeEventSchema.parse(payload)),
  customers: providerCustomers({
    sql,
    sealing,
    fetchWith: (apiKey, customerId) =>
      stripeCustomer({ apiBase: config.STRIPE_API_BASE, apiKey, customerId, timeoutMs: config.DOWNSTREAM_TIMEOUT_MS }),
  }),
});

const reconcileEveryConnection = async () => {
  for (const { productId } of await connectionsWithApiKey(sql)) {
    try {
      const report = await reconcileStripe(deps, productId, { waitMs: 0 });
      if (report.new > 0) logger.info({ productId, ...report }, "stripe reconciliation stored missed events");
    } catch (error) {
      logger.warn({ err: error, productId }, "stripe reconciliation failed; the next run tries again");
    }
  }
};
const stopReconcile =
  config.STRIPE_RECONCILE_INTERVAL_MS > 0
    ? startPeriodicJob(logger, "stripe reconciliation", config.STRIPE_RECONCILE_INTERVAL_MS, reconcileEveryConnection)
    : async () => undefined;

await serve({
  routes: routes(deps),
  background: [
    ["stripe reconciliation", stopReconcile],
    ["apply worker", () => worker.stop()],
  ],
});
