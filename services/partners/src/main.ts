/** The partners process: config -> connections -> RPC server and outbox relay -> close on SIGTERM. */
import {
  connectNats,
  createLogger,
  createSql,
  databaseAndBrokerReady,
  ensureStream,
  exitOnUnhandledFailure,
  onShutdown,
  PageTokens,
  startMetricsServer,
  startOutboxRelay,
  startRpcServer,
} from "@affiliate/platform";
import { loadPartnersConfig } from "./config.js";
import { routes, schema } from "./server.js";

const config = loadPartnersConfig();
const logger = createLogger("partners", config.LOG_LEVEL);
exitOnUnhandledFailure(logger);
const sql = createSql(config.DATABASE_URL, { schema, max: config.DATABASE_POOL_SIZE, applicationName: "partners" });
const nats = await connectNats(config.NATS_URL, "partners");
await ensureStream(await nats.jetstreamManager(), { service: "partners", namespace: config.EVENTS_NAMESPACE });
const relay = startOutboxRelay({ sql, js: nats.jetstream(), schema, namespace: config.EVENTS_NAMESPACE, logger });

const metrics = await startMetricsServer({
  port: config.METRICS_PORT,
  host: config.RPC_HOST,
  logger,
  sql,
  service: "partners",
});
const server = await startRpcServer({
  port: config.RPC_PORT,
  host: config.RPC_HOST,
  logger,
  routes: routes({ sql, pageTokens: new PageTokens(config.PAGE_TOKEN_SECRET) }),
  readiness: databaseAndBrokerReady(sql, nats),
});

onShutdown(logger, [
  ["rpc server", () => server.close()],
  ["outbox relay", () => relay.stop()],
  ["nats", () => nats.drain()],
  ["metrics", () => metrics.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);
