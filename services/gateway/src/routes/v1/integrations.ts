import type { IntegrationsService } from "@affiliate/proto/integrations";
import {
  stripeEventOutcomeValue,
  toPage,
  toPublicStripeConnection,
  toPublicStripeEvent,
} from "@affiliate/rest-shapes/mappers";
import {
  connectStripeBodySchema,
  listStripeEventsQuerySchema,
  reconcileStripeBodySchema,
  reconcileStripeResponseSchema,
  stripeConnectionResponseSchema,
  stripeEventListResponseSchema,
  stripeEventParamsSchema,
  stripeEventResponseSchema,
} from "@affiliate/rest-shapes/schemas/integrations";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { defineRoute } from "../../http/define-route.js";

export interface IntegrationsRouteDeps {
  integrations: Client<typeof IntegrationsService>;
}

const tags: [string] = ["Integrations"];

/** The product's Stripe connection and the events it received (contract section 13), owned by integrations. */
export async function integrationsRoutes(app: FastifyInstance, { integrations }: IntegrationsRouteDeps) {
  defineRoute(app, {
    method: "PUT",
    url: "/integrations/stripe",
    operationId: "connectStripe",
    tags,
    summary: "Connect Stripe, or replace its secrets",
    description:
      "Stores the endpoint's signing secret (and an API key for reconciliation), encrypted; they are never answered. A second PUT replaces them: the previous webhook secret keeps verifying for 24 hours. Paste the gateway's public address + webhook_path into Stripe's dashboard.",
    access: "management",
    body: connectStripeBodySchema,
    answers: { 200: { description: "Connected", schema: stripeConnectionResponseSchema } },
    handler: async ({ body, request }) => {
      const { connection } = await integrations.connectStripe({
        productId: request.productId,
        webhookSecret: body.webhook_secret,
        apiKey: body.api_key,
      });
      return { data: toPublicStripeConnection(connection) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/integrations/stripe",
    operationId: "getStripeConnection",
    tags,
    summary: "Read the Stripe connection",
    access: "management",
    answers: {
      200: { description: "The connection", schema: stripeConnectionResponseSchema },
      404: { description: "Stripe is not connected" },
    },
    handler: async ({ request }) => {
      const { connection } = await integrations.getStripeConnection({ productId: request.productId });
      return { data: toPublicStripeConnection(connection) };
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/integrations/stripe",
    operationId: "disconnectStripe",
    tags,
    summary: "Disconnect Stripe",
    description: "Forgets the secrets; the receiver's path answers 404 from now on.",
    access: "management",
    answers: { 204: { description: "Disconnected" }, 404: { description: "Stripe is not connected" } },
    handler: async ({ request, reply }) => {
      await integrations.disconnectStripe({ productId: request.productId });
      return reply.code(204).send();
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/integrations/stripe/events",
    operationId: "listStripeEvents",
    tags,
    summary: "List the received Stripe events with their outcomes, newest first",
    access: "management",
    query: listStripeEventsQuerySchema,
    answers: { 200: { description: "One page", schema: stripeEventListResponseSchema } },
    handler: async ({ query, request }) => {
      const page = await integrations.listStripeEvents({
        productId: request.productId,
        outcome: query.outcome === undefined ? undefined : stripeEventOutcomeValue(query.outcome),
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(page.events.map(toPublicStripeEvent), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/integrations/stripe/events/:id/retry",
    operationId: "retryStripeEvent",
    tags,
    summary: "Apply a failed Stripe event again",
    access: "management",
    params: stripeEventParamsSchema,
    pathResources: { id: "Stripe event" },
    answers: {
      200: { description: "The event with its new outcome", schema: stripeEventResponseSchema },
      // A state the request cannot apply to is FAILED_PRECONDITION, a 400 like every other route's.
      400: { description: "The event did not fail ({ error }), or an unknown query parameter" },
    },
    handler: async ({ params, request }) => {
      const { event } = await integrations.retryStripeEvent({ productId: request.productId, eventId: params.id });
      return { data: toPublicStripeEvent(event) };
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/integrations/stripe/reconcile",
    operationId: "reconcileStripe",
    tags,
    summary: "Fetch the events Stripe holds and store those never received",
    description:
      "Needs the connection's api_key. Pages Stripe's events API for the handled types since `since` and stores each event not received yet as if it had been delivered; answers how many were fetched, new, and (by the time it answers) applied or failed.",
    access: "management",
    body: reconcileStripeBodySchema,
    bodyRequired: false,
    answers: {
      200: { description: "What reconciliation found", schema: reconcileStripeResponseSchema },
      404: { description: "Stripe is not connected" },
      400: { description: "The connection has no API key ({ error }), validation failed, or malformed JSON" },
    },
    handler: async ({ body, request }) => {
      const report = await integrations.reconcileStripe({
        productId: request.productId,
        since: body?.since ? timestampFromDate(new Date(body.since)) : undefined,
      });
      return {
        data: {
          fetched: Number(report.fetched),
          new: Number(report.new),
          applied: Number(report.applied),
          failed: Number(report.failed),
        },
      };
    },
  });
}
