/** The notifier process: config -> connections -> RPC server, event consumers, job workers -> close on SIGTERM. */

import { createRpcTransport, PageTokens, startServiceProcess } from "@affiliate/platform";
import { LedgerService } from "@affiliate/proto/ledger";
import { PartnersService } from "@affiliate/proto/partners";
import { createClient } from "@connectrpc/connect";
import { loadNotifierConfig } from "./config.js";
import { startConsumers } from "./events/consumers.js";
import { startListenerIndex } from "./events/listeners.js";
import { ownersOver } from "./events/owners.js";
import { subscriptions } from "./events/payloads.js";
import { smtpMailer } from "./outbound/smtp-mailer.js";
import { routes, schema } from "./server.js";
import { startWorkers } from "./workers.js";

const config = loadNotifierConfig();
// It publishes nothing; the producers it consumes may start after it.
const { logger, sql, nats, jsm, serve } = await startServiceProcess({
  name: "notifier",
  config,
  schema,
  publishes: false,
  consumes: subscriptions.map((subscription) => subscription.stream),
});
const clock = () => new Date();

const owners = ownersOver(
  createClient(LedgerService, createRpcTransport(config.LEDGER_URL)),
  createClient(PartnersService, createRpcTransport(config.PARTNERS_URL)),
);
const listeners = startListenerIndex({ url: config.DATABASE_URL, schema, sql, logger });
const consumers = await startConsumers({
  sql,
  listeners,
  js: nats.jetstream(),
  jsm,
  namespace: config.EVENTS_NAMESPACE,
  logger,
  owners,
  clock,
  emailSettings: { portalUrl: config.PORTAL_URL },
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

await serve({
  routes: routes({
    sql,
    clock,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET),
  }),
  background: [
    ["event consumers", () => Promise.all(consumers.map((consumer) => consumer.stop()))],
    ["endpoint feed", () => listeners.stop()],
    ["job workers", () => workers.stop()],
    ["mailer", () => mailer?.close()],
  ],
});
