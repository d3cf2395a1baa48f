/** The payouts process: config -> connections -> RPC server, refund consumer, outbox relay, draft recovery, schedule -> close on SIGTERM. */

import { createRpcTransport, PageTokens, startPeriodicJob, startServiceProcess } from "@affiliate/platform";
import { LedgerService } from "@affiliate/proto/ledger";
import { PartnersAdminService, PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadPayoutsConfig } from "./config.js";
import { type PayoutDeps, recoverStaleDrafts } from "./domain/finish-drafts.js";
import { runScheduledGeneration } from "./domain/scheduled-generation.js";
import { consumeCommissionRefunds } from "./events/commission-refunded.js";
import { ledgerOver, partnersOver } from "./rpc/downstream.js";
import { routes, schema } from "./server.js";

const config = loadPayoutsConfig();
// The ledger may start after us: its stream is ensured too (a stream's definition is shared).
const { logger, sql, nats, jsm, serve } = await startServiceProcess({
  name: "payouts",
  config,
  schema,
  publishes: true,
  consumes: ["ledger"],
});

const partnersTransport = createRpcTransport(config.PARTNERS_URL);
const deps: PayoutDeps = {
  sql,
  ledger: ledgerOver(createClient(LedgerService, createRpcTransport(config.LEDGER_URL))),
  partners: partnersOver(
    createClient(PartnersService, partnersTransport),
    createClient(PartnersAdminService, partnersTransport),
  ),
  logger,
  clock: () => new Date(),
};

const refunds = await consumeCommissionRefunds({
  sql,
  js: nats.jetstream(),
  jsm,
  namespace: config.EVENTS_NAMESPACE,
  logger,
});

// Generations that stopped between claiming and finishing (contract 8, recovery).
const stopRecovery = startPeriodicJob(logger, "draft recovery", 30_000, async () => {
  const finished = await recoverStaleDrafts(deps);
  if (finished > 0) logger.info({ finished }, "payout drafts recovered");
});
const stopSchedule =
  config.PAYOUT_INTERVAL_MS > 0
    ? startPeriodicJob(logger, "payout schedule", Math.min(config.PAYOUT_INTERVAL_MS, 60_000), async () => {
        const created = await runScheduledGeneration(deps, config.PAYOUT_INTERVAL_MS);
        if (created !== undefined) logger.info({ created }, "scheduled payout generation ran");
      })
    : async () => {};

await serve({
  routes: routes({ ...deps, pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET) }),
  background: [
    ["payout schedule", stopSchedule],
    ["draft recovery", stopRecovery],
    ["refund consumer", () => refunds.stop()],
  ],
});
