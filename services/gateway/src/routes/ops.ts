import { Health, HealthCheckResponse_ServingStatus } from "@affiliate/proto/health";
import { createClient, type Transport } from "@connectrpc/connect";
import swagger, { type StaticDocumentSpec } from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { oas31, ZodOpenApiPathsObject } from "zod-openapi";
import { unavailableRetryAfterSeconds } from "../errors.js";
import { errorSchema } from "../schemas/common.js";

/** Whether everything the gateway calls is ready to serve. */
export type ReadinessCheck = () => Promise<boolean>;

/** Asks partners' grpc.health.v1 Health/Check (the whole server) over the gateway's own transport. */
export function partnersReadiness(transport: Transport, timeoutMs = 1000): ReadinessCheck {
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

export interface OpsRouteDeps {
  ready: ReadinessCheck;
  document: oas31.OpenAPIObject;
}

/** Probes and documentation: no key, no rate limit. */
export async function opsRoutes(app: FastifyInstance, { ready, document }: OpsRouteDeps) {
  app.get("/healthz", async () => ({ status: "ok" }));

  app.get("/readyz", async (_request, reply) => {
    if (await ready()) return { status: "ready" };
    return reply
      .code(503)
      .header("retry-after", String(unavailableRetryAfterSeconds))
      .send({ error: "The partners service is not ready" });
  });

  app.get("/api/v1/openapi.json", async () => document);

  // Static mode: the document is the one built from the routes' zod schemas, not Fastify's.
  await app.register(swagger, {
    mode: "static",
    // The plugin's types predate OpenAPI 3.1; it serves the object as given.
    specification: { document: document as unknown as StaticDocumentSpec["document"] },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

export const opsPaths: ZodOpenApiPathsObject = {
  "/healthz": {
    get: {
      operationId: "healthz",
      tags: ["Operations"],
      summary: "The process is alive",
      security: [],
      responses: { 200: { description: "Alive", ...json(z.object({ status: z.literal("ok") })) } },
    },
  },
  "/readyz": {
    get: {
      operationId: "readyz",
      tags: ["Operations"],
      summary: "The gateway and every service it calls are ready",
      security: [],
      responses: {
        200: { description: "Ready", ...json(z.object({ status: z.literal("ready") })) },
        503: { description: "Not ready", ...json(errorSchema) },
      },
    },
  },
  "/api/v1/openapi.json": {
    get: {
      operationId: "openapi",
      tags: ["Operations"],
      summary: "This document (OpenAPI 3.1)",
      security: [],
      responses: { 200: { description: "The OpenAPI document", ...json(z.record(z.string(), z.unknown())) } },
    },
  },
};
