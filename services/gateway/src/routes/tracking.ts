import type { LedgerService } from "@affiliate/proto/ledger";
import { toPublicTrackedEvent, toTrackRequest } from "@affiliate/rest-shapes/mappers";
import { bodyErrors, errorResponses, trackingAuthErrors } from "@affiliate/rest-shapes/schemas/common";
import { trackEventBodySchema, trackEventResponseSchema } from "@affiliate/rest-shapes/schemas/tracking";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { parseOrThrow } from "../errors.js";

export interface TrackingRouteDeps {
  ledger: Client<typeof LedgerService>;
}

/**
 * POST /events (contract section 5): clicks, signups and payments, recorded by the ledger. A
 * test key (request.testMode) records a sandbox event that touches nothing live.
 */
export async function trackingRoutes(app: FastifyInstance, { ledger }: TrackingRouteDeps) {
  app.post("/events", async (request, reply) => {
    const body = parseOrThrow(trackEventBodySchema, request.body);
    const response = await ledger.track({
      productId: request.productId,
      testMode: request.testMode,
      ...toTrackRequest(body),
    });
    // A payment already recorded under its external_id: the original event, nothing created.
    return reply.code(response.replayed ? 200 : 201).send({ data: toPublicTrackedEvent(response.event) });
  });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

export const trackingPaths: ZodOpenApiPathsObject = {
  "/events": {
    post: {
      operationId: "trackEvent",
      tags: ["Tracking"],
      summary: "Record a click, signup or payment",
      description:
        "Takes a live key (sk_live_…) or a test key (sk_test_…). A test key selects sandbox mode: the event is validated and stored as test data, and the answer shows the commissions it would create (ids null); nothing live changes. A live attributed payment creates a level-1 commission and, when the affiliate has an active sponsor, a level-2 one. Rate-limited per key by TRACKING_RATE_LIMIT_PER_MINUTE.",
      requestBody: { required: true, ...json(trackEventBodySchema) },
      responses: {
        201: { description: "Recorded", ...json(trackEventResponseSchema) },
        200: {
          description: "A payment whose external_id was already recorded: the original event, nothing created twice",
          ...json(trackEventResponseSchema),
        },
        400: errorResponses.badRequest,
        404: { ...errorResponses[404], description: "A click with a referral code no active affiliate has" },
        409: { ...errorResponses[409], description: "The same payment is being recorded concurrently; retry" },
        ...trackingAuthErrors,
        ...bodyErrors,
      },
    },
  },
};
