import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Health, HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from "@affiliate/proto/health";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type Interceptor, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { NatsConnection } from "nats";
import { type BalancedTransport, balancedTransport } from "./balanced-transport.js";
import { isConnectionError, type Sql } from "./db.js";
import { DomainError, toConnectError } from "./errors.js";
import type { Logger } from "./logger.js";
import { clientMetrics, serverMetrics } from "./metrics.js";
import { refuseBadText } from "./refuse-bad-text.js";
import { clientTracing, serverTracing } from "./tracing.js";

/** Answers whether the process can serve: its database and broker respond. */
export type ReadinessCheck = () => Promise<boolean>;

/** The readiness of a service with a schema and events: its database answers and NATS is not closed. */
export function databaseAndBrokerReady(sql: Sql, nats: NatsConnection): ReadinessCheck {
  return async () => {
    if (nats.isClosed()) return false;
    await sql`select 1`;
    return true;
  };
}

/**
 * Turns what a handler throws into what the caller should see: DomainErrors keep their meaning,
 * a lost database connection is UNAVAILABLE (the caller may retry), anything else is logged with
 * its cause and answered as a generic INTERNAL error that leaks nothing.
 */
export function errorMapping(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof DomainError) throw toConnectError(error);
      if (error instanceof ConnectError) throw error;
      if (isConnectionError(error)) {
        logger.warn({ err: error, method: req.method.name }, "dependency unavailable");
        throw new ConnectError("A dependency of the service is unavailable", Code.Unavailable);
      }
      logger.error({ err: error, method: req.method.name }, "unhandled error in RPC handler");
      throw new ConnectError("Internal error", Code.Internal);
    }
  };
}

function healthService(isServing: () => Promise<boolean>): ServiceImpl<typeof Health> {
  const status = async () =>
    create(HealthCheckResponseSchema, {
      status: (await isServing())
        ? HealthCheckResponse_ServingStatus.SERVING
        : HealthCheckResponse_ServingStatus.NOT_SERVING,
    });
  return {
    check: () => status(),
    list: async () => ({ statuses: { "": await status() } }),
    async *watch(_req, context) {
      let last: HealthCheckResponse_ServingStatus | undefined;
      while (!context.signal.aborted) {
        const current = await status();
        if (current.status !== last) yield current;
        last = current.status;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
  };
}

export interface RpcServerOptions {
  /** Registers the service's implementations. */
  routes: (router: ConnectRouter) => void;
  port: number;
  host: string;
  logger: Logger;
  readiness: ReadinessCheck;
}

export interface RpcServer {
  /** The bound port (useful when `port` was 0). */
  port: number;
  /** Stops accepting, reports NOT_SERVING, lets in-flight calls finish, then closes. */
  close(): Promise<void>;
}

/**
 * The RPC server every service runs: HTTP/2 cleartext answering Connect, gRPC and gRPC-web on
 * one port, `grpc.health.v1.Health` for probes, and `/healthz` (alive) and `/readyz` (database
 * and broker answer) for humans with `curl --http2-prior-knowledge`. A request carrying bad text
 * (U+0000, an unpaired surrogate) in any string field is INVALID_ARGUMENT naming the field.
 */
export async function startRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const { logger } = options;
  let closing = false;
  // Promise.resolve().then() also catches a readiness check that throws synchronously.
  const isServing = async () =>
    !closing &&
    (await Promise.resolve()
      .then(() => options.readiness())
      .catch(() => false));

  const handler = connectNodeAdapter({
    // Metrics outermost: they count the code the caller gets, after errors are mapped. Bad text is
    // refused innermost, before any handler sees it: every service deploys alone.
    interceptors: [serverMetrics, serverTracing, errorMapping(logger), refuseBadText],
    routes: (router) => {
      options.routes(router);
      router.service(Health, healthService(isServing));
    },
    fallback: (req, res) => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      const path = (req.url ?? "").split("?")[0];
      if (path === "/healthz") reply(200, { status: "ok" });
      else if (path === "/readyz") {
        void isServing().then((ready) => reply(ready ? 200 : 503, { status: ready ? "ready" : "not ready" }));
      } else reply(404, { error: "Not found" });
    },
  });

  const server = http2.createServer(handler);
  // Known sessions, only to cut stragglers on close (see close()).
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, "rpc server listening");

  return {
    port,
    async close() {
      closing = true;
      // Node 24 closes an HTTP/2 server gracefully by itself: every session gets GOAWAY, idle
      // ones close at once, in-flight streams finish (Node 20 waited for clients to hang up).
      // Stragglers are cut after 10 s.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const timer = setTimeout(() => {
        for (const session of sessions) session.destroy();
      }, 10_000);
      await closed;
      clearTimeout(timer);
    },
  };
}

export interface RpcTransportOptions {
  /** Deadline of each call unless the call sets its own. */
  timeoutMs?: number;
  /** Resolves the service's name to its addresses (DNS by default; tests give their own). */
  resolve?: (host: string) => Promise<string[]>;
}

/**
 * A client transport to another service: the Connect protocol with binary payloads over HTTP/2
 * (measured on this stack: ~2.0k trivial calls/s through a Fastify route, against ~1.3k with the
 * gRPC protocol), trace context and metrics on every call. Calls are balanced one by one over
 * every address the service's name resolves to (a headless Service's ready pods), one
 * multiplexed session each (see balancedTransport). Uncompressed: services talk inside one
 * cluster, where gzipping every answer over 1 KB (connect-node's default) cost more CPU on both
 * sides than the bytes saved (a 12-month time series spent a tenth of its time in zlib).
 */
export function createRpcTransport(baseUrl: string, options: RpcTransportOptions = {}): BalancedTransport {
  return balancedTransport(baseUrl, {
    ...(options.resolve ? { resolve: options.resolve } : {}),
    connect(url) {
      const sessionManager = new Http2SessionManager(url, { pingIntervalMs: 15_000 });
      const transport = createConnectTransport({
        baseUrl: url,
        httpVersion: "2",
        useBinaryFormat: true,
        interceptors: [clientMetrics, clientTracing],
        defaultTimeoutMs: options.timeoutMs ?? 5000,
        acceptCompression: [],
        sessionManager,
      });
      return { transport, close: () => sessionManager.abort() };
    },
  });
}
