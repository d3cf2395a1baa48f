import type { PartnersService } from "@affiliate/proto/partners";
import { ContractViolation } from "@affiliate/rest-shapes/mappers";
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import { consoleSessionResponseSchema, openConsoleSessionBodySchema } from "@affiliate/rest-shapes/schemas/console";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { bearerTokenOf } from "../../auth/authenticate.js";
import { HttpError } from "../../errors.js";
import { defineRoute } from "../../http/define-route.js";

export interface ConsoleSessionsRouteDeps {
  partners: Client<typeof PartnersService>;
}

const tags: [string] = ["Console"];

/**
 * The merchant console's sign-in and sign-out (contract section 19). A session is opened with
 * the secret key itself, never with another session, so no session outlives its key's choice of
 * lifetime; it ends at expiry, at sign-out, or when the product's keys are rotated.
 */
export async function consoleSessionsRoutes(app: FastifyInstance, { partners }: ConsoleSessionsRouteDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/console/sessions",
    operationId: "openConsoleSession",
    tags,
    summary: "Open a merchant console session",
    description:
      "Exchanges the live secret key (x-api-key) for a short-lived console session token (cst_…) that the management API accepts as `Authorization: Bearer cst_…`. The console at /console does this once at sign-in and keeps the token in memory only. A session cannot open another one (403): sign in with the key. The session ends at expires_at, on DELETE /api/v1/console/sessions/current, and when the product's keys are rotated.",
    access: "management",
    body: openConsoleSessionBodySchema,
    bodyRequired: false,
    answers: {
      201: { description: "The session", schema: consoleSessionResponseSchema },
      403: {
        description: "A test-mode key, or a console session: sessions are opened with the live secret key",
        schema: errorSchema,
      },
    },
    handler: async ({ body, request, reply }) => {
      if (request.consoleSession) {
        throw new HttpError(403, { error: "A console session cannot open another one: sign in with the secret key" });
      }
      const { token, expiresAt } = await partners.openConsoleSession({
        productId: request.productId,
        ttlSeconds: body.ttl_seconds,
      });
      if (!expiresAt) throw new ContractViolation("opened console session without expires_at");
      return reply.code(201).send({ data: { token, expires_at: timestampDate(expiresAt).toISOString() } });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/console/sessions/current",
    operationId: "closeConsoleSession",
    tags,
    summary: "Sign out of the console",
    description:
      "Ends the console session this request is sent with (`Authorization: Bearer cst_…`); every gateway refuses it from then on. With a secret key instead there is no session to end: 204 all the same.",
    access: "management",
    answers: { 204: { description: "The session is closed" } },
    handler: async ({ request, reply }) => {
      const token = bearerTokenOf(request);
      if (request.consoleSession && token) await partners.closeConsoleSession({ token });
      return reply.code(204).send();
    },
  });
}
