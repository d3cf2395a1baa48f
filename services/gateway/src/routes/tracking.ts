import { connectErrorOfStatus } from "@affiliate/platform";
import type { LedgerService, TrackBatchResult, TrackResponse } from "@affiliate/proto/ledger";
import { ContractViolation, toPublicTrackedEvent, toTrackRequest } from "@affiliate/rest-shapes/mappers";
import { errorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  type PublicTrackBatchResponse,
  type PublicTrackBatchResult,
  type TrackEventBody,
  trackBatchBodySchema,
  trackBatchEnvelopeSchema,
  trackBatchResponseSchema,
  trackEventBodySchema,
  trackEventResponseSchema,
} from "@affiliate/rest-shapes/schemas/tracking";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError, httpErrorOfItem, parseStrictOrThrow } from "../errors.js";
import { defineRoute } from "../http/define-route.js";
import type { TrackCoalescer } from "../track-coalescer.js";

export interface TrackingRouteDeps {
  ledger: Client<typeof LedgerService>;
  /** Gathers concurrent single events into TrackBatch calls; without it each is its own Track. */
  coalescer: TrackCoalescer | undefined;
  /**
   * Spends a request's events beyond the first from the key's tracking budget (the first was
   * spent on arrival); throws the 429 when they do not fit.
   */
  spendMoreEvents: (request: FastifyRequest, events: number) => void;
}

/** The event's own Track answer, or its error thrown as Track would have thrown it. */
function trackedOrThrow(result: TrackBatchResult): TrackResponse {
  if (result.outcome.case === "tracked") return result.outcome.value;
  if (result.outcome.case === "error") throw connectErrorOfStatus(result.outcome.value);
  throw new ContractViolation("a TrackBatch result without an outcome");
}

/** One event of a batch as the merchant sees it: the status and body it would have had alone. */
function publicResult(index: number, result: TrackBatchResult | HttpError): PublicTrackBatchResult {
  if (!(result instanceof HttpError) && result.outcome.case === "tracked") {
    const { event, replayed } = result.outcome.value;
    return { index, status: replayed ? 200 : 201, data: toPublicTrackedEvent(event) };
  }
  const answer =
    result instanceof HttpError
      ? result
      : result.outcome.case === "error"
        ? httpErrorOfItem(result.outcome.value)
        : httpErrorOfItem(undefined);
  const body = answer.body;
  return "error" in body
    ? { index, status: answer.statusCode, error: body.error, ...(body.details ? { details: body.details } : {}) }
    : { index, status: answer.statusCode, error: body.data.error };
}

function summaryOf(results: PublicTrackBatchResult[]): PublicTrackBatchResponse["summary"] {
  const recorded = results.filter((r) => r.status === 201).length;
  const replayed = results.filter((r) => r.status === 200).length;
  return { total: results.length, recorded, replayed, failed: results.length - recorded - replayed };
}

const tags: [string] = ["Tracking"];

/**
 * POST /events (contract section 5) and POST /events/batch (5a): clicks, signups and payments,
 * recorded by the ledger. A test key (request.testMode) records sandbox events that touch
 * nothing live.
 */
export async function trackingRoutes(app: FastifyInstance, { ledger, coalescer, spendMoreEvents }: TrackingRouteDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/events",
    operationId: "trackEvent",
    tags,
    summary: "Record a click, signup or payment",
    description:
      "Takes a live key (sk_live_…) or a test key (sk_test_…). A test key selects sandbox mode: the event is validated and stored as test data, and the answer shows the commissions it would create (ids null); nothing live changes. A live attributed payment creates a level-1 commission and, when the affiliate has an active sponsor, a level-2 one. Rate-limited per key by TRACKING_RATE_LIMIT_PER_MINUTE.",
    access: "tracking",
    body: trackEventBodySchema,
    answers: {
      201: { description: "Recorded", schema: trackEventResponseSchema },
      200: {
        description: "A payment whose external_id was already recorded: the original event, nothing created twice",
        schema: trackEventResponseSchema,
      },
      404: { description: "A click with a referral code no active affiliate has", schema: errorSchema },
      409: { description: "The same payment is being recorded concurrently; retry", schema: errorSchema },
    },
    handler: async ({ body, request, reply }) => {
      const event = { productId: request.productId, testMode: request.testMode, ...toTrackRequest(body) };
      const response = coalescer ? trackedOrThrow(await coalescer.track(event)) : await ledger.track(event);
      // A payment already recorded under its external_id: the original event, nothing created.
      return reply.code(response.replayed ? 200 : 201).send({ data: toPublicTrackedEvent(response.event) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/events/batch",
    operationId: "trackEventBatch",
    tags,
    summary: "Record up to 500 clicks, signups and payments in one request",
    description:
      "For merchants that report at volume or backfill history. The same keys and sandbox rule as POST /events. Each event is processed as if sent alone to POST /events, in order (an event is attributed through the clicks and signups before it in the batch), and answered with the status and body it would have had; one invalid event (an unknown field too) fails alone. The answer is 200 whenever the envelope is valid. The tracking rate limit counts events: a batch of 100 spends 100.",
    access: "tracking",
    // The envelope is validated; each event is checked by itself below, so it fails alone.
    body: trackBatchEnvelopeSchema,
    documentedBody: trackBatchBodySchema,
    answers: {
      200: {
        description: "One result per event, in request order, and their summary",
        schema: trackBatchResponseSchema,
      },
      400: {
        description:
          "The envelope is invalid (not an object with an events array of 1-500 items, or a field beside events): nothing recorded",
      },
    },
    handler: async ({ body: { events }, request, reply }) => {
      spendMoreEvents(request, events.length - 1);
      // Each event is checked as POST /events checks it, unknown fields included; the invalid ones fail here, alone.
      const checked = events.map((body) => {
        try {
          return parseStrictOrThrow(trackEventBodySchema, body);
        } catch (error) {
          if (error instanceof HttpError) return error;
          throw error;
        }
      });
      const valid = checked.filter((event): event is TrackEventBody => !(event instanceof HttpError));
      const { results } =
        valid.length > 0
          ? await ledger.trackBatch({
              events: valid.map((body) => ({
                productId: request.productId,
                testMode: request.testMode,
                ...toTrackRequest(body),
              })),
            })
          : { results: [] };
      if (results.length !== valid.length) {
        throw new ContractViolation(`TrackBatch answered ${results.length} results for ${valid.length} events`);
      }
      let next = 0;
      const answers = checked.map((event, index) =>
        publicResult(index, event instanceof HttpError ? event : (results[next++] as TrackBatchResult)),
      );
      return reply.code(200).send({ results: answers, summary: summaryOf(answers) });
    },
  });
}
