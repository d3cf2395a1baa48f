import type { ConnectRouter } from "@connectrpc/connect";
import type { JetStreamManager, NatsConnection } from "nats";
import type { RpcServiceConfig } from "./config.js";
import { purgeAppliedEvents } from "./consumer.js";
import { createSql, type Sql } from "./db.js";
import { connectNats, ensureStream } from "./events.js";
import { createLogger, type Logger } from "./logger.js";
import { startMetricsServer } from "./metrics.js";
import { startOutboxRelay } from "./outbox-relay.js";
import { startPeriodicJob } from "./periodic.js";
import { databaseAndBrokerReady, startRpcServer } from "./rpc-server.js";
import { exitOnUnhandledFailure, onShutdown, type ShutdownStep } from "./shutdown.js";
import { retryStartup } from "./startup.js";

export interface ServiceProcessOptions {
  /** The service's name: its logger, pool application name, NATS connection and metrics label. */
  name: string;
  config: RpcServiceConfig;
  /** The Postgres schema it owns. */
  schema: string;
  /** Whether it publishes events: its own stream is ensured and its outbox relayed. */
  publishes: boolean;
  /**
   * Streams of other services it consumes with durable consumers. They may start after it; a
   * stream's definition is shared (ensureStream), so whoever comes first creates it. A service
   * that consumes gets the hourly purge of the event ids its consumers applied.
   */
  consumes?: string[];
}

export interface ServiceProcess {
  logger: Logger;
  sql: Sql;
  nats: NatsConnection;
  jsm: JetStreamManager;
  /**
   * Serves: metrics on METRICS_PORT, then the RPC server on RPC_PORT (ready while the database
   * and NATS answer). On SIGTERM it stops in this order: the RPC server (calls in flight finish),
   * `background` in the order given (jobs, consumers, workers), the applied-event purge, the
   * outbox relay, NATS, metrics, the database.
   */
  serve(options: { routes: (router: ConnectRouter) => void; background?: ShutdownStep[] }): Promise<void>;
}

/**
 * The spine every RPC service's process shares, so each `main.ts` holds only what is its own:
 * the logger and crash handling, the pool on its schema, NATS with the streams it writes and
 * reads, the outbox relay when it publishes; then `serve` with its routes and background work.
 */
export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const { name, config, schema } = options;
  const logger = createLogger(name, config.LOG_LEVEL);
  exitOnUnhandledFailure(logger);
  const sql = createSql(config.DATABASE_URL, { schema, max: config.DATABASE_POOL_SIZE, applicationName: name });
  const streams = [...(options.publishes ? [name] : []), ...(options.consumes ?? [])];
  // A NATS not reachable yet, or answering TIMEOUT while JetStream elects a leader, delays the
  // start (retryStartup) instead of ending the process.
  const { nats, jsm } = await retryStartup(logger, "connecting to NATS", async () => {
    const nats = await connectNats(config.NATS_URL, name);
    try {
      const jsm = await nats.jetstreamManager();
      for (const service of new Set(streams)) {
        await ensureStream(
          jsm,
          { service, namespace: config.EVENTS_NAMESPACE },
          { replicas: config.EVENTS_REPLICAS, logger },
        );
      }
      return { nats, jsm };
    } catch (error) {
      await nats.close().catch(() => undefined);
      throw error;
    }
  });
  const relay = options.publishes
    ? startOutboxRelay({ sql, nats, schema, namespace: config.EVENTS_NAMESPACE, logger })
    : undefined;

  return {
    logger,
    sql,
    nats,
    jsm,
    async serve({ routes, background = [] }) {
      const stopPurge = options.consumes?.length ? purgeAppliedEventsHourly(sql, logger) : undefined;
      const metrics = await startMetricsServer({
        port: config.METRICS_PORT,
        host: config.RPC_HOST,
        logger,
        sql,
        service: name,
      });
      const server = await startRpcServer({
        port: config.RPC_PORT,
        host: config.RPC_HOST,
        logger,
        routes,
        readiness: databaseAndBrokerReady(sql, nats),
      });
      onShutdown(logger, [
        ["rpc server", () => server.close()],
        ...background,
        ...(stopPurge ? [["applied event purge", stopPurge] satisfies ShutdownStep] : []),
        ...(relay ? [["outbox relay", () => relay.stop()] satisfies ShutdownStep] : []),
        ["nats", () => nats.drain()],
        ["metrics", () => metrics.close()],
        ["database", () => sql.end({ timeout: 5 })],
      ]);
    },
  };
}

/**
 * Forgets, every hour, the ids of applied events older than their streams can redeliver
 * (purgeAppliedEvents), so `applied_events` stays as small as the streams' retention.
 */
function purgeAppliedEventsHourly(sql: Sql, logger: Logger): () => Promise<void> {
  return startPeriodicJob(logger, "applied event purge", 60 * 60 * 1000, async () => {
    const purged = await purgeAppliedEvents(sql);
    if (purged > 0) logger.info({ purged }, "applied event ids purged");
  });
}
