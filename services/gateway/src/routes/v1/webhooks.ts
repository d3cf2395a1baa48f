import type { NotifierService } from "@affiliate/proto/notifier";
import { toPage } from "@affiliate/rest-shapes/mappers";
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
import { defineRoute } from "../../http/define-route.js";

export interface WebhooksRouteDeps {
  notifier: Client<typeof NotifierService>;
}

const tags: [string] = ["Webhooks"];
const webhookId = { params: webhookIdParamsSchema, pathResources: { id: "Webhook" } } as const;
const deliveryIds = {
  params: deliveryParamsSchema,
  pathResources: { id: "Webhook", delivery_id: "Delivery" },
} as const;

/** Webhook endpoints and their deliveries (contract sections 9 and 9b), all owned by the notifier. */
export async function webhooksRoutes(app: FastifyInstance, { notifier }: WebhooksRouteDeps) {
  defineRoute(app, {
    method: "POST",
    url: "/webhooks",
    operationId: "createWebhook",
    tags,
    summary: "Register a webhook endpoint",
    description:
      "Answers the signing secret (whsec_…), shown only here. Deliveries are signed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) and retried after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h and 24 h.",
    access: "management",
    body: createWebhookBodySchema,
    answers: { 201: { description: "Registered", schema: createdWebhookResponseSchema } },
    handler: async ({ body, request, reply }) => {
      const { webhook, secret } = await notifier.createWebhook({
        productId: request.productId,
        url: body.url,
        events: body.events ?? [],
      });
      return reply.code(201).send({ data: { ...toPublicWebhook(webhook), secret } });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/webhooks",
    operationId: "listWebhooks",
    tags,
    summary: "List the product's webhook endpoints, newest first",
    access: "management",
    answers: { 200: { description: "Every endpoint", schema: webhookListResponseSchema } },
    handler: async ({ request }) => {
      const { webhooks } = await notifier.listWebhooks({ productId: request.productId });
      return { data: webhooks.map(toPublicWebhook) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/webhooks/:id",
    operationId: "getWebhook",
    tags,
    summary: "Read one endpoint",
    access: "management",
    ...webhookId,
    answers: { 200: { description: "The endpoint", schema: webhookResponseSchema } },
    handler: async ({ params, request }) => {
      const { webhook } = await notifier.getWebhook({ productId: request.productId, webhookId: params.id });
      return { data: toPublicWebhook(webhook) };
    },
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/webhooks/:id",
    operationId: "updateWebhook",
    tags,
    summary: "Change the URL, the event types, or enable or disable",
    access: "management",
    ...webhookId,
    body: updateWebhookBodySchema,
    answers: { 200: { description: "The endpoint", schema: webhookResponseSchema } },
    handler: async ({ params, body, request }) => {
      const { webhook } = await notifier.updateWebhook({
        productId: request.productId,
        webhookId: params.id,
        ...(body.url !== undefined ? { url: body.url } : {}),
        ...(body.events !== undefined ? { eventsSet: true, events: body.events } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      });
      return { data: toPublicWebhook(webhook) };
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/webhooks/:id",
    operationId: "deleteWebhook",
    tags,
    summary: "Delete the endpoint and its deliveries",
    access: "management",
    ...webhookId,
    answers: { 204: { description: "Deleted" } },
    handler: async ({ params, request, reply }) => {
      await notifier.deleteWebhook({ productId: request.productId, webhookId: params.id });
      return reply.code(204).send();
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/webhooks/:id/rotate-secret",
    operationId: "rotateWebhookSecret",
    tags,
    summary: "Make a new signing secret; the old one also signs for 24 hours",
    access: "management",
    ...webhookId,
    answers: { 200: { description: "The new secret", schema: rotatedSecretResponseSchema } },
    handler: async ({ params, request }) => {
      const rotated = await notifier.rotateWebhookSecret({ productId: request.productId, webhookId: params.id });
      return { data: { id: rotated.webhookId, secret: rotated.secret } };
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/webhooks/:id/test",
    operationId: "testWebhook",
    tags,
    summary: "Send a signed webhook.test event",
    access: "management",
    ...webhookId,
    answers: { 202: { description: "Queued", schema: deliveryResponseSchema } },
    handler: async ({ params, request, reply }) => {
      const { delivery } = await notifier.testWebhook({ productId: request.productId, webhookId: params.id });
      return reply.code(202).send({ data: toPublicDelivery(delivery) });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/webhooks/:id/deliveries",
    operationId: "listDeliveries",
    tags,
    summary: "List an endpoint's deliveries, newest first (kept 30 days)",
    access: "management",
    ...webhookId,
    query: listDeliveriesQuerySchema,
    answers: { 200: { description: "One page", schema: deliveryListResponseSchema } },
    handler: async ({ params, query, request }) => {
      const page = await notifier.listDeliveries({
        productId: request.productId,
        webhookId: params.id,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(page.deliveries.map(toPublicDelivery), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/webhooks/:id/deliveries/:delivery_id",
    operationId: "getDelivery",
    tags,
    summary: "Read one delivery with its attempts",
    access: "management",
    ...deliveryIds,
    answers: { 200: { description: "The delivery", schema: deliveryDetailResponseSchema } },
    handler: async ({ params, request }) => {
      const { delivery } = await notifier.getDelivery({
        productId: request.productId,
        webhookId: params.id,
        deliveryId: params.delivery_id,
      });
      return { data: toPublicDeliveryDetail(delivery) };
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/webhooks/:id/deliveries/:delivery_id/retry",
    operationId: "retryDelivery",
    tags,
    summary: "Attempt the delivery once more now, with the same webhook-id",
    access: "management",
    ...deliveryIds,
    answers: { 202: { description: "Queued", schema: deliveryResponseSchema } },
    handler: async ({ params, request, reply }) => {
      const { delivery } = await notifier.retryDelivery({
        productId: request.productId,
        webhookId: params.id,
        deliveryId: params.delivery_id,
      });
      return reply.code(202).send({ data: toPublicDelivery(delivery) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/webhooks/:id/recover",
    operationId: "recoverDeliveries",
    tags,
    summary: "Attempt again every failed delivery created in a window",
    access: "management",
    ...webhookId,
    body: recoverBodySchema,
    answers: { 202: { description: "How many were queued", schema: recoverResponseSchema } },
    handler: async ({ params, body, request, reply }) => {
      const { requeued } = await notifier.recoverDeliveries({
        productId: request.productId,
        webhookId: params.id,
        since: timestampFromDate(new Date(body.since)),
        ...(body.until ? { until: timestampFromDate(new Date(body.until)) } : {}),
      });
      return reply.code(202).send({ data: { requeued: Number(requeued) } });
    },
  });
}
