/**
 * The ledger process: config -> connections -> RPC server, outbox relay, hold sweep, key purge,
 * payout-event consumers -> close on SIGTERM.
 */

import {
  connectNats,
  createLogger,
  createRpcTransport,
  createSql,
  databaseAndBrokerReady,
  ensureStream,
  exitOnUnhandledFailure,
  onShutdown,
  PageTokens,
  purgeAppliedEvents,
  startMetricsServer,
  startOutboxRelay,
  startPeriodicJob,
  startRpcServer,
} from "@affiliate/platform";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadLedgerConfig } from "./config.js";
import { approveDueCommissions } from "./domain/approve-due-commissions.js";
import { compactDailyRollups } from "./domain/compact-rollups.js";
import { purgeExpiredKeys } from "./domain/idempotency.js";
import { consumePayoutEvents } from "./events/payout-events.js";
import { CachedPartnersDirectory, followPartnersEvents } from "./partners-directory.js";
import { routes, schema } from "./server.js";

const config = loadLedgerConfig();
const logger = createLogger("ledger", config.LOG_LEVEL);
exitOnUnhandledFailure(logger);
const sql = createSql(config.DATABASE_URL, { schema, max: config.DATABASE_POOL_SIZE, applicationName: "ledger" });
const nats = await connectNats(config.NATS_URL, "ledger");
await ensureStream(await nats.jetstreamManager(), { service: "ledger", namespace: config.EVENTS_NAMESPACE });
const relay = startOutboxRelay({ sql, js: nats.jetstream(), schema, namespace: config.EVENTS_NAMESPACE, logger });

const partners = new CachedPartnersDirectory(createClient(PartnersService, createRpcTransport(config.PARTNERS_URL)), {
  ttlMs: config.ATTRIBUTION_CACHE_TTL_MS,
  maxEntries: 50_000,
});
// Its own connection: the follow reports itself not-following on a disconnect and follows afresh
// after a reconnect, and closes the connection on stop.
const following = followPartnersEvents({
  directory: partners,
  connect: () => connectNats(config.NATS_URL, "ledger-partners-events"),
  namespace: config.EVENTS_NAMESPACE,
  logger,
});

const stopSweep = startPeriodicJob(logger, "hold sweep", config.HOLD_SWEEP_INTERVAL_MS, async () => {
  const approved = await approveDueCommissions(sql, new Date());
  if (approved > 0) logger.info({ approved }, "hold sweep approved commissions");
});

// Hourly: old days' rollup shards folded into one row each, so long stats windows read few rows.
const stopCompaction = startPeriodicJob(logger, "rollup compaction", 60 * 60 * 1000, async () => {
  const days = await compactDailyRollups(sql, new Date());
  if (days > 0) logger.info({ days }, "daily rollup shards folded");
});

// Hourly: expired idempotency keys (older than 30 days) go, so a key can be used again, and so do
// consumed event ids older than the streams can redeliver.
const stopPurges = startPeriodicJob(logger, "purges", 60 * 60 * 1000, async () => {
  const keys = await purgeExpiredKeys(sql);
  const events = await purgeAppliedEvents(sql);
  if (keys + events > 0) logger.info({ keys, events }, "expired idempotency keys and applied event ids purged");
});

const payoutEvents = await consumePayoutEvents({
  sql,
  js: nats.jetstream(),
  jsm: await nats.jetstreamManager(),
  namespace: config.EVENTS_NAMESPACE,
  logger,
});

const metrics = await startMetricsServer({
  port: config.METRICS_PORT,
  host: config.RPC_HOST,
  logger,
  sql,
  service: "ledger",
});
const server = await startRpcServer({
  port: config.RPC_PORT,
  host: config.RPC_HOST,
  logger,
  routes: routes({ sql, partners, pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET), clock: () => new Date() }),
  readiness: databaseAndBrokerReady(sql, nats),
});

onShutdown(logger, [
  ["rpc server", () => server.close()],
  ["hold sweep", stopSweep],
  ["purges", stopPurges],
  ["rollup compaction", stopCompaction],
  ["payout events", () => Promise.all(payoutEvents.map((consumer) => consumer.stop()))],
  ["partners events", () => following.stop()],
  ["outbox relay", () => relay.stop()],
  ["nats", () => nats.drain()],
  ["metrics", () => metrics.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);
