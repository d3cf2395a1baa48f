import { DomainError, type PageTokens } from "@affiliate/platform";
import type { NotifierService } from "@affiliate/proto/notifier";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { getDeliveryOrThrow, listDeliveries, recoverDeliveries, retryDelivery } from "../domain/deliveries.js";
import {
  createWebhook,
  deleteWebhook,
  getWebhookOrThrow,
  listWebhooks,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
  type WebhookDeps,
} from "../domain/webhooks.js";
import { deliveryToProto, webhookToProto } from "./mappers.js";

export interface NotifierServiceDeps extends WebhookDeps {
  pageTokens: PageTokens;
}

/** NotifierService: each handler decodes, calls one use case, encodes. */
export function createNotifierService(deps: NotifierServiceDeps): ServiceImpl<typeof NotifierService> {
  return {
    async createWebhook(req) {
      const { endpoint, secret } = await createWebhook(deps, req.productId, { url: req.url, events: req.events });
      return { webhook: webhookToProto(endpoint), secret };
    },
    async listWebhooks(req) {
      return { webhooks: (await listWebhooks(deps, req.productId)).map(webhookToProto) };
    },
    async getWebhook(req) {
      return { webhook: webhookToProto(await getWebhookOrThrow(deps, req.productId, req.webhookId)) };
    },
    async updateWebhook(req) {
      const endpoint = await updateWebhook(deps, req.productId, req.webhookId, {
        ...(req.url !== undefined ? { url: req.url } : {}),
        ...(req.eventsSet ? { events: req.events } : {}),
        ...(req.enabled !== undefined ? { enabled: req.enabled } : {}),
      });
      return { webhook: webhookToProto(endpoint) };
    },
    async deleteWebhook(req) {
      await deleteWebhook(deps, req.productId, req.webhookId);
      return {};
    },
    async rotateWebhookSecret(req) {
      return { webhookId: req.webhookId, secret: await rotateWebhookSecret(deps, req.productId, req.webhookId) };
    },
    async testWebhook(req) {
      return { delivery: deliveryToProto(await testWebhook(deps, req.productId, req.webhookId)) };
    },
    async listDeliveries(req) {
      const page = await listDeliveries(deps, req.productId, req.webhookId, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { deliveries: page.items.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },
    async getDelivery(req) {
      return {
        delivery: deliveryToProto(await getDeliveryOrThrow(deps, req.productId, req.webhookId, req.deliveryId)),
      };
    },
    async retryDelivery(req) {
      return { delivery: deliveryToProto(await retryDelivery(deps, req.productId, req.webhookId, req.deliveryId)) };
    },
    async recoverDeliveries(req) {
      if (!req.since) throw DomainError.invalidField("since", "Required");
      const requeued = await recoverDeliveries(deps, req.productId, req.webhookId, {
        since: timestampDate(req.since),
        ...(req.until ? { until: timestampDate(req.until) } : {}),
      });
      return { requeued: BigInt(requeued) };
    },
  };
}
