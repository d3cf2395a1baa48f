// The server side of every service's RPC: one HTTP/2 port answering Connect, gRPC and gRPC-web,
// health, and the interceptors that map errors and honour the caller's deadline. Calling another
// service is rpc-client.ts.
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Health, HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from "@affiliate/proto/health";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type Interceptor, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { NatsConnection } from "nats";
import { isConnectionError, isRetryableConflict, reachesWritablePrimary, type Sql } from "./db.js";
import { commitReserveMs, Deadline, withDeadline } from "./deadline.js";
import { DomainError, toConnectError } from "./errors.js";
import type { Logger } from "./logger.js";
import { serverMetrics } from "./metrics.js";
import { refuseBadText } from "./refuse-bad-text.js";
import { serverTracing } from "./tracing.js";

/** Answers whether the process can serve: its database and broker respond. */
export type ReadinessCheck = () => Promise<boolean>;

/**
 * The readiness of a service with a schema and events: NATS is not closed and its pool reaches a
 * writable primary (after a failover, only once it has found the promoted standby).
 */
export function databaseAndBrokerReady(sql: Sql, nats: NatsConnection): ReadinessCheck {
  return async () => !nats.isClosed() && (await reachesWritablePrimary(sql));
}

/**
 * Turns what a handler throws into what the caller should see: DomainErrors keep their meaning,
 * a lost database connection or a conflict (a read-only server) is UNAVAILABLE (the caller may retry), anything else is logged with
 * its cause and answered as a generic INTERNAL error that leaks nothing.
 */
export function errorMapping(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof DomainError) throw toConnectError(error);
      if (error instanceof ConnectError) throw error;
      // A conflict still there after the platform's retries (db.ts) applied nothing either.
      if (isConnectionError(error) || isRetryableConflict(error)) {
        logger.warn({ err: error, method: req.method.name }, "dependency unavailable");
        throw new ConnectError("A dependency of the service is unavailable", Code.Unavailable);
      }
      logger.error({ err: error, method: req.method.name }, "unhandled error in RPC handler");
      throw new ConnectError("Internal error", Code.Internal);
    }
  };
}

/**
 * Serves each call within the deadline its caller sent (Connect's `connect-timeout-ms`, gRPC's
 * `grpc-timeout`): transactions and outgoing calls made while handling it are bounded by it (see
 * deadline.ts). A call that arrives with too little time left to commit anything is refused as
 * DEADLINE_EXCEEDED before it starts. A call without a deadline runs unbounded.
 */
export const serverDeadline: Interceptor = (next) => async (req) => {
  const timeoutMs = callerTimeoutMs(req.header);
  if (timeoutMs === undefined) return next(req);
  if (timeoutMs <= commitReserveMs) throw toConnectError(DomainError.deadlineExceeded());
  return withDeadline(Deadline.in(timeoutMs), () => next(req));
};

const grpcTimeoutUnitsMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

function callerTimeoutMs(header: Headers): number | undefined {
  const connect = header.get("connect-timeout-ms");
  if (connect !== null && /^\d{1,10}$/.test(connect)) return Number(connect);
  const grpc = /^(\d{1,8})([HMSmun])$/.exec(header.get("grpc-timeout") ?? "");
  if (grpc) return Number(grpc[1]) * (grpcTimeoutUnitsMs[grpc[2] as string] ?? 1);
  return undefined;
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
    interceptors: [serverMetrics, serverTracing, serverDeadline, errorMapping(logger), refuseBadText],
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
