import type { NotifierService } from "@affiliate/proto/notifier";
import { authenticatedErrors, bodyErrors, errorResponses } from "@affiliate/rest-shapes/schemas/common";
import {
  createdWebhookResponseSchema,
  createWebhookBodySchema,
  deliveryDetailResponseSchema,
  deliveryListResponseSchema,
  deliveryParamsSchema,
  deliveryResponseSchema,
  listDeliveriesQuerySchema,
  recoverBodySchema,
  recoverResponseSchema,
  rotatedSecretResponseSchema,
  updateWebhookBodySchema,
  webhookIdParamsSchema,
  webhookListResponseSchema,
  webhookResponseSchema,
} from "@affiliate/rest-shapes/schemas/webhooks";
import { toPublicDelivery, toPublicDeliveryDetail, toPublicWebhook } from "@affiliate/rest-shapes/webhook-mappers";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { parseOrThrow, pathIdOrThrow, pathParamsOrThrow } from "../../errors.js";

export interface WebhooksRouteDeps {
  notifier: Client<typeof NotifierService>;
}

/** Webhook endpoints and their deliveries (contract sections 9 and 9b), all owned by the notifier. */
export async function webhooksRoutes(app: FastifyInstance, { notifier }: WebhooksRouteDeps) {
  app.post("/webhooks", async (request, reply) => {
    const body = parseOrThrow(createWebhookBodySchema, request.body);
    const { webhook, secret } = await notifier.createWebhook({
      productId: request.productId,
      url: body.url,
      events: body.events ?? [],
    });
    return reply.code(201).send({ data: { ...toPublicWebhook(webhook), secret } });
  });

  app.get("/webhooks", async (request) => {
    const { webhooks } = await notifier.listWebhooks({ productId: request.productId });
    return { data: webhooks.map(toPublicWebhook) };
  });

  app.get("/webhooks/:id", async (request) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const { webhook } = await notifier.getWebhook({ productId: request.productId, webhookId: id });
    return { data: toPublicWebhook(webhook) };
  });

  app.patch("/webhooks/:id", async (request) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const body = parseOrThrow(updateWebhookBodySchema, request.body);
    const { webhook } = await notifier.updateWebhook({
      productId: request.productId,
      webhookId: id,
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.events !== undefined ? { eventsSet: true, events: body.events } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
    });
    return { data: toPublicWebhook(webhook) };
  });

  app.delete("/webhooks/:id", async (request, reply) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    await notifier.deleteWebhook({ productId: request.productId, webhookId: id });
    return reply.code(204).send();
  });

  app.post("/webhooks/:id/rotate-secret", async (request) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const { webhookId, secret } = await notifier.rotateWebhookSecret({ productId: request.productId, webhookId: id });
    return { data: { id: webhookId, secret } };
  });

  app.post("/webhooks/:id/test", async (request, reply) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const { delivery } = await notifier.testWebhook({ productId: request.productId, webhookId: id });
    return reply.code(202).send({ data: toPublicDelivery(delivery) });
  });

  app.get("/webhooks/:id/deliveries", async (request) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const query = parseOrThrow(listDeliveriesQuerySchema, request.query);
    const page = await notifier.listDeliveries({
      productId: request.productId,
      webhookId: id,
      pageSize: query.limit,
      pageToken: query.cursor ?? "",
    });
    return {
      data: page.deliveries.map(toPublicDelivery),
      pagination: { next_cursor: page.nextPageToken || null, has_more: page.nextPageToken !== "" },
    };
  });

  app.get("/webhooks/:id/deliveries/:delivery_id", async (request) => {
    const params = pathParamsOrThrow(deliveryParamsSchema, request.params, { id: "Webhook", delivery_id: "Delivery" });
    const { delivery } = await notifier.getDelivery({
      productId: request.productId,
      webhookId: params.id,
      deliveryId: params.delivery_id,
    });
    return { data: toPublicDeliveryDetail(delivery) };
  });

  app.post("/webhooks/:id/deliveries/:delivery_id/retry", async (request, reply) => {
    const params = pathParamsOrThrow(deliveryParamsSchema, request.params, { id: "Webhook", delivery_id: "Delivery" });
    const { delivery } = await notifier.retryDelivery({
      productId: request.productId,
      webhookId: params.id,
      deliveryId: params.delivery_id,
    });
    return reply.code(202).send({ data: toPublicDelivery(delivery) });
  });

  app.post("/webhooks/:id/recover", async (request, reply) => {
    const id = pathIdOrThrow(webhookIdParamsSchema, request.params, "Webhook");
    const body = parseOrThrow(recoverBodySchema, request.body);
    const { requeued } = await notifier.recoverDeliveries({
      productId: request.productId,
      webhookId: id,
      since: timestampFromDate(new Date(body.since)),
      ...(body.until ? { until: timestampFromDate(new Date(body.until)) } : {}),
    });
    return reply.code(202).send({ data: { requeued: Number(requeued) } });
  });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });
const tags = ["Webhooks"];
const notFound = { 404: errorResponses[404] };
const withBody = { 400: errorResponses.badRequest, ...authenticatedErrors, ...bodyErrors };

export const webhooksPaths: ZodOpenApiPathsObject = {
  "/api/v1/webhooks": {
    post: {
      operationId: "createWebhook",
      tags,
      summary: "Register a webhook endpoint",
      description:
        "Answers the signing secret (whsec_…), shown only here. Deliveries are signed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) and retried after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h and 24 h.",
      requestBody: { required: true, ...json(createWebhookBodySchema) },
      responses: { 201: { description: "Registered", ...json(createdWebhookResponseSchema) }, ...withBody },
    },
    get: {
      operationId: "listWebhooks",
      tags,
      summary: "List the product's webhook endpoints, newest first",
      responses: { 200: { description: "Every endpoint", ...json(webhookListResponseSchema) }, ...authenticatedErrors },
    },
  },
  "/api/v1/webhooks/{id}": {
    get: {
      operationId: "getWebhook",
      tags,
      summary: "Read one endpoint",
      requestParams: { path: webhookIdParamsSchema },
      responses: {
        200: { description: "The endpoint", ...json(webhookResponseSchema) },
        ...notFound,
        ...authenticatedErrors,
      },
    },
    patch: {
      operationId: "updateWebhook",
      tags,
      summary: "Change the URL, the event types, or enable or disable",
      requestParams: { path: webhookIdParamsSchema },
      requestBody: { required: true, ...json(updateWebhookBodySchema) },
      responses: { 200: { description: "The endpoint", ...json(webhookResponseSchema) }, ...notFound, ...withBody },
    },
    delete: {
      operationId: "deleteWebhook",
      tags,
      summary: "Delete the endpoint and its deliveries",
      requestParams: { path: webhookIdParamsSchema },
      responses: { 204: { description: "Deleted" }, ...notFound, ...authenticatedErrors },
    },
  },
  "/api/v1/webhooks/{id}/rotate-secret": {
    post: {
      operationId: "rotateWebhookSecret",
      tags,
      summary: "Make a new signing secret; the old one also signs for 24 hours",
      requestParams: { path: webhookIdParamsSchema },
      responses: {
        200: { description: "The new secret", ...json(rotatedSecretResponseSchema) },
        ...notFound,
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/webhooks/{id}/test": {
    post: {
      operationId: "testWebhook",
      tags,
      summary: "Send a signed webhook.test event",
      requestParams: { path: webhookIdParamsSchema },
      responses: {
        202: { description: "Queued", ...json(deliveryResponseSchema) },
        ...notFound,
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/webhooks/{id}/deliveries": {
    get: {
      operationId: "listDeliveries",
      tags,
      summary: "List an endpoint's deliveries, newest first (kept 30 days)",
      requestParams: { path: webhookIdParamsSchema, query: listDeliveriesQuerySchema },
      responses: {
        200: { description: "One page", ...json(deliveryListResponseSchema) },
        400: errorResponses.validation,
        ...notFound,
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/webhooks/{id}/deliveries/{delivery_id}": {
    get: {
      operationId: "getDelivery",
      tags,
      summary: "Read one delivery with its attempts",
      requestParams: { path: deliveryParamsSchema },
      responses: {
        200: { description: "The delivery", ...json(deliveryDetailResponseSchema) },
        ...notFound,
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry": {
    post: {
      operationId: "retryDelivery",
      tags,
      summary: "Attempt the delivery once more now, with the same webhook-id",
      requestParams: { path: deliveryParamsSchema },
      responses: {
        202: { description: "Queued", ...json(deliveryResponseSchema) },
        ...notFound,
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/webhooks/{id}/recover": {
    post: {
      operationId: "recoverDeliveries",
      tags,
      summary: "Attempt again every failed delivery created in a window",
      requestParams: { path: webhookIdParamsSchema },
      requestBody: { required: true, ...json(recoverBodySchema) },
      responses: {
        202: { description: "How many were queued", ...json(recoverResponseSchema) },
        ...notFound,
        ...withBody,
      },
    },
  },
};
