import {
  connectNats,
  createLogger,
  createRpcTransport,
  exitOnUnhandledFailure,
  gracefulHttpClose,
  onShutdown,
  startMetricsServer,
} from "@affiliate/platform";
import { IntegrationsService } from "@affiliate/proto/integrations";
import { LedgerService } from "@affiliate/proto/ledger";
import { NotifierService } from "@affiliate/proto/notifier";
import { PartnersService } from "@affiliate/proto/partners";
import { PayoutsService } from "@affiliate/proto/payouts";
import { PrivacyService } from "@affiliate/proto/privacy";
import { createClient } from "@connectrpc/connect";
import { authenticateWith, KeyCache } from "./auth/key-cache.js";
import { startKeyEvictions } from "./auth/key-evictions.js";
import { loadGatewayConfig } from "./config.js";
import { gatewayReadiness } from "./routes/ops.js";
import { buildServer } from "./server.js";

const config = loadGatewayConfig();
const logger = createLogger("gateway", config.LOG_LEVEL);
exitOnUnhandledFailure(logger);

const partnersTransport = createRpcTransport(config.PARTNERS_URL);
const ledgerTransport = createRpcTransport(config.LEDGER_URL);
const payoutsTransport = createRpcTransport(config.PAYOUTS_URL);
const notifierTransport = createRpcTransport(config.NOTIFIER_URL);
const privacyTransport = createRpcTransport(config.PRIVACY_URL);
const integrationsTransport = createRpcTransport(config.INTEGRATIONS_URL);
const partners = createClient(PartnersService, partnersTransport);
const ledger = createClient(LedgerService, ledgerTransport);
const payouts = createClient(PayoutsService, payoutsTransport);
const notifier = createClient(NotifierService, notifierTransport);
const privacy = createClient(PrivacyService, privacyTransport);
const integrations = createClient(IntegrationsService, integrationsTransport);
const keyCache = new KeyCache({ resolve: authenticateWith(partners), ttlMs: config.KEY_CACHE_TTL_MS });
const evictions = startKeyEvictions({
  connect: () => connectNats(config.NATS_URL, "gateway"),
  namespace: config.EVENTS_NAMESPACE,
  cache: keyCache,
  logger,
});

const ready = gatewayReadiness({
  partners: partnersTransport,
  ledger: ledgerTransport,
  payouts: payoutsTransport,
  notifier: notifierTransport,
  privacy: privacyTransport,
  integrations: integrationsTransport,
});
const app = buildServer({
  partners,
  ledger,
  payouts,
  notifier,
  privacy,
  integrations,
  ready,
  logger,
  config,
  keyCache,
});
const closeConnections = gracefulHttpClose(app.server);
const metrics = await startMetricsServer({ port: config.METRICS_PORT, host: config.HOST, logger, service: "gateway" });
await app.listen({ port: config.PORT, host: config.HOST });

onShutdown(logger, [
  // Keep-alive clients are told `Connection: close` on a response, never reset; then Fastify's own hooks.
  ["stop accepting requests and finish in-flight ones", closeConnections],
  ["close the app", () => app.close()],
  ["stop following key rotations", () => evictions.stop()],
  ["metrics", () => metrics.close()],
]);
