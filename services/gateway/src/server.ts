import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Logger } from "@affiliate/platform";
import type { PartnersService } from "@affiliate/proto/partners";
import type { Client } from "@connectrpc/connect";
import rateLimit from "@fastify/rate-limit";
import { trace } from "@opentelemetry/api";
import fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import { authenticate } from "./auth/authenticate.js";
import { hashKey, type KeyCache } from "./auth/key-cache.js";
import type { GatewayConfig } from "./config.js";
import { errorHandler, RateLimitedError } from "./errors.js";
import { openApiDocument } from "./openapi.js";
import { opsRoutes, type ReadinessCheck } from "./routes/ops.js";
import { affiliatesRoutes } from "./routes/v1/affiliates.js";
import { programRoutes } from "./routes/v1/program.js";
import { noLedgerYet, type PartnershipStatsSource } from "./stats-source.js";

export interface GatewayDeps {
  partners: Client<typeof PartnersService>;
  /** Whether the services the gateway calls are ready (GET /readyz). */
  ready: ReadinessCheck;
  logger: Logger;
  config: Pick<GatewayConfig, "RATE_LIMIT_PER_MINUTE">;
  keyCache: KeyCache;
  stats?: PartnershipStatsSource;
}

export const maxBodyBytes = 1024 * 1024;

const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

/** A caller's request id is kept when it is sane, so its logs and ours line up; else a new one. */
function requestIdOf(request: IncomingMessage): string {
  const given = request.headers["x-request-id"];
  return typeof given === "string" && requestIdPattern.test(given) ? given : randomUUID();
}

/** Per key when one is sent (hashed: raw keys are never kept), per client address otherwise. */
function rateLimitKey(request: FastifyRequest): string {
  const apiKey = request.headers["x-api-key"];
  return typeof apiKey === "string" && apiKey !== "" ? `key:${hashKey(apiKey)}` : `ip:${request.ip}`;
}

/**
 * The gateway's HTTP server, routes and hooks, ready for `listen` or `inject`. It holds no state
 * of its own beyond the key cache it is given.
 */
export function buildServer(deps: GatewayDeps): FastifyInstance {
  const app = fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request, written below without addresses or headers.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: requestIdOf,
    bodyLimit: maxBodyBytes,
  });

  // Bodies are JSON only; anything else is answered 415 instead of reaching validation as text.
  app.removeContentTypeParser("text/plain");
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: "Route not found" }));

  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
    trace.getActiveSpan()?.setAttribute("http.request_id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? "(none)",
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      "request completed",
    );
  });

  app.register(opsRoutes, { ready: deps.ready, document: openApiDocument() });

  app.register(
    async (v1) => {
      await v1.register(rateLimit, {
        max: deps.config.RATE_LIMIT_PER_MINUTE,
        timeWindow: 60_000,
        keyGenerator: rateLimitKey,
        errorResponseBuilder: (_request, context) => new RateLimitedError(Math.max(1, Math.ceil(context.ttl / 1000))),
      });
      // preParsing: after the rate limiter (onRequest), before a body is read for an unknown caller.
      const auth = authenticate(deps.keyCache);
      v1.addHook("preParsing", async (request) => {
        await auth(request);
      });
      await v1.register(affiliatesRoutes, { partners: deps.partners, stats: deps.stats ?? noLedgerYet });
      await v1.register(programRoutes, { partners: deps.partners });
    },
    { prefix: "/api/v1" },
  );

  return app;
}
