/**
 * The privacy process: config -> connections -> RPC server, outbox relay, the resume job for
 * erasures whose runner is gone -> close on SIGTERM.
 */

import {
  connectNats,
  createLogger,
  createSql,
  databaseAndBrokerReady,
  ensureStream,
  exitOnUnhandledFailure,
  onShutdown,
  startMetricsServer,
  startOutboxRelay,
  startPeriodicJob,
  startRpcServer,
} from "@affiliate/platform";
import { loadPrivacyConfig } from "./config.js";
import { EmailKeys } from "./domain/email-keys.js";
import { resumeAbandonedErasures } from "./domain/erase-customer.js";
import { configuredOwners } from "./rpc/owners.js";
import { routes, schema } from "./server.js";

const config = loadPrivacyConfig();
const logger = createLogger("privacy", config.LOG_LEVEL);
exitOnUnhandledFailure(logger);
const sql = createSql(config.DATABASE_URL, { schema, max: config.DATABASE_POOL_SIZE, applicationName: "privacy" });
const nats = await connectNats(config.NATS_URL, "privacy");
await ensureStream(await nats.jetstreamManager(), { service: "privacy", namespace: config.EVENTS_NAMESPACE });
const relay = startOutboxRelay({ sql, js: nats.jetstream(), schema, namespace: config.EVENTS_NAMESPACE, logger });

const { owners } = configuredOwners(
  { ledger: config.LEDGER_URL, partners: config.PARTNERS_URL, notifier: config.NOTIFIER_URL },
  config.OWNER_TIMEOUT_MS,
);
logger.info({ owners: owners.map((owner) => owner.name) }, "erasure owners");
const deps = { sql, owners, keys: new EmailKeys(config.ERASURE_HASH_KEY), leaseMs: config.ERASURE_LEASE_MS };

const stopResume = startPeriodicJob(logger, "erasure resume", config.ERASURE_RESUME_INTERVAL_MS, async () => {
  const completed = await resumeAbandonedErasures(deps, (erasureId, error) =>
    logger.warn({ err: error, erasureId }, "erasure still not finished; will retry"),
  );
  if (completed > 0) logger.info({ completed }, "resumed erasures completed");
});

const metrics = await startMetricsServer({
  port: config.METRICS_PORT,
  host: config.RPC_HOST,
  logger,
  sql,
  service: "privacy",
});
const server = await startRpcServer({
  port: config.RPC_PORT,
  host: config.RPC_HOST,
  logger,
  routes: routes({ ...deps, logger }),
  readiness: databaseAndBrokerReady(sql, nats),
});

onShutdown(logger, [
  ["rpc server", () => server.close()],
  ["erasure resume", stopResume],
  ["outbox relay", () => relay.stop()],
  ["nats", () => nats.drain()],
  ["metrics", () => metrics.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);
