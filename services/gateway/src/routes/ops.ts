import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { errorSchema, retryAfterHeader } from "@affiliate/rest-shapes/schemas/common";
import { createClient, type Transport } from "@connectrpc/connect";
import swagger, { type StaticDocumentSpec } from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { unavailableRetryAfterSeconds } from "../errors.js";
import { defineRoute } from "../http/define-route.js";
import type { OpenApiDocument } from "../openapi.js";

/** Whether one service is ready to serve. */
export type ServiceCheck = () => Promise<boolean>;

/** The names of the services the gateway calls that are not ready; empty when all are. */
export type ReadinessReport = () => Promise<string[]>;

/**
 * Asks a service's grpc.health.v1 Health/Check (the whole server) over the gateway's own
 * transport to it: ready only when it answers SERVING within `timeoutMs`.
 */
export function serviceHealth(transport: Transport, timeoutMs = 1000): ServiceCheck {
  const health = createClient(Health, transport);
  return async () => {
    try {
      const { status } = await health.check({ service: "" }, { timeoutMs });
      return status === HealthCheckResponse_ServingStatus.SERVING;
    } catch {
      return false;
    }
  };
}

/** Every service's check at once; a check that throws counts as not ready. */
export function readinessOf(checks: Record<string, ServiceCheck>): ReadinessReport {
  return async () => {
    const entries = Object.entries(checks);
    const ready = await Promise.all(entries.map(([, check]) => check().catch(() => false)));
    return entries.filter((_entry, index) => !ready[index]).map(([name]) => name);
  };
}

/** The gateway's readiness: partners, the ledger, payouts, the notifier, privacy AND integrations (when given) answer SERVING. */
export function gatewayReadiness(
  transports: {
    partners: Transport;
    ledger: Transport;
    payouts: Transport;
    notifier: Transport;
    privacy: Transport;
    integrations?: Transport;
  },
  timeoutMs = 1000,
) {
  return readinessOf({
    partners: serviceHealth(transports.partners, timeoutMs),
    ledger: serviceHealth(transports.ledger, timeoutMs),
    payouts: serviceHealth(transports.payouts, timeoutMs),
    notifier: serviceHealth(transports.notifier, timeoutMs),
    privacy: serviceHealth(transports.privacy, timeoutMs),
    ...(transports.integrations ? { integrations: serviceHealth(transports.integrations, timeoutMs) } : {}),
  });
}

export interface OpsRouteDeps {
  ready: ReadinessReport;
  /** The document of every route; asked once the app is ready, when every route is registered. */
  document: () => OpenApiDocument;
}

const tags: [string] = ["Operations"];

/**
 * Probes and documentation: no key, no rate limit. They take no input, and are not strict about
 * a query: a probe or a monitor that adds a cache-busting parameter must not read as "down".
 */
export async function opsRoutes(app: FastifyInstance, { ready, document }: OpsRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/healthz",
    operationId: "healthz",
    tags,
    summary: "The process is alive",
    access: "public",
    strict: false,
    answers: { 200: { description: "Alive", schema: z.object({ status: z.literal("ok") }) } },
    handler: async () => ({ status: "ok" }),
  });

  defineRoute(app, {
    method: "GET",
    url: "/readyz",
    operationId: "readyz",
    tags,
    summary: "The gateway and every service it calls are ready",
    access: "public",
    strict: false,
    answers: {
      200: { description: "Ready", schema: z.object({ status: z.literal("ready") }) },
      503: {
        description: "A service behind the gateway is not ready; the error names it",
        schema: errorSchema,
        headers: retryAfterHeader,
      },
    },
    handler: async ({ reply }) => {
      const notReady = await ready();
      if (notReady.length === 0) return { status: "ready" };
      return reply
        .code(503)
        .header("retry-after", String(unavailableRetryAfterSeconds))
        .send({ error: `Not ready: ${notReady.join(", ")}` });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/api/v1/openapi.json",
    operationId: "openapi",
    tags,
    summary: "This document (OpenAPI 3.1)",
    access: "public",
    strict: false,
    answers: { 200: { description: "The OpenAPI document", schema: z.record(z.string(), z.unknown()) } },
    handler: async () => document(),
  });

  // Static mode: the document is the one built from the route declarations, not Fastify's.
  await app.register(swagger, {
    mode: "static",
    // The plugin's types predate OpenAPI 3.1; it serves the object as given.
    specification: { document: document() as unknown as StaticDocumentSpec["document"] },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
}
