/** The notifier process: config -> connections -> RPC server, event consumers, job workers -> close on SIGTERM. */

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
  startPeriodicJob,
  startRpcServer,
} from "@affiliate/platform";
import { LedgerService } from "@affiliate/proto/ledger";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadNotifierConfig } from "./config.js";
import { startConsumers } from "./events/consumers.js";
import { ownersOver } from "./events/owners.js";
import { subscriptions } from "./events/payloads.js";
import { smtpMailer } from "./outbound/smtp-mailer.js";
import { routes, schema } from "./server.js";
import { startWorkers } from "./workers.js";

const config = loadNotifierConfig();
const logger = createLogger("notifier", config.LOG_LEVEL);
exitOnUnhandledFailure(logger);
const sql = createSql(config.DATABASE_URL, { schema, max: config.DATABASE_POOL_SIZE, applicationName: "notifier" });
const nats = await connectNats(config.NATS_URL, "notifier");
const jsm = await nats.jetstreamManager();
// The producers may start after us; their streams' definitions are shared (platform ensureStream).
for (const service of new Set(subscriptions.map((subscription) => subscription.stream))) {
  await ensureStream(jsm, { service, namespace: config.EVENTS_NAMESPACE });
}
const clock = () => new Date();

const owners = ownersOver(
  createClient(LedgerService, createRpcTransport(config.LEDGER_URL)),
  createClient(PartnersService, createRpcTransport(config.PARTNERS_URL)),
);
const consumers = await startConsumers({
  sql,
  js: nats.jetstream(),
  jsm,
  namespace: config.EVENTS_NAMESPACE,
  logger,
  owners,
  clock,
});
const mailer = config.SMTP_URL ? smtpMailer(config.SMTP_URL, config.MAIL_FROM) : undefined;
const workers = startWorkers({
  sql,
  logger,
  clock,
  allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
  mailer,
  concurrency: config.DELIVERY_CONCURRENCY,
});
const stopPurge = startPeriodicJob(logger, "applied event purge", 60 * 60 * 1000, () => purgeAppliedEvents(sql));

const metrics = await startMetricsServer({
  port: config.METRICS_PORT,
  host: config.RPC_HOST,
  logger,
  sql,
  service: "notifier",
});
const server = await startRpcServer({
  port: config.RPC_PORT,
  host: config.RPC_HOST,
  logger,
  routes: routes({
    sql,
    clock,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET),
  }),
  readiness: databaseAndBrokerReady(sql, nats),
});

onShutdown(logger, [
  ["rpc server", () => server.close()],
  ["event consumers", () => Promise.all(consumers.map((consumer) => consumer.stop()))],
  ["job workers", () => workers.stop()],
  ["applied event purge", stopPurge],
  ["mailer", () => mailer?.close()],
  ["nats", () => nats.drain()],
  ["metrics", () => metrics.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);
