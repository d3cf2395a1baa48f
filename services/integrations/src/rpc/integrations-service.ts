import { currentDeadline, enumFilter, type PageTokens } from "@affiliate/platform";
import type { IntegrationsService } from "@affiliate/proto/integrations";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { connectionToProto, eventToProto, outcomeToProto } from "../codec.js";
import { type ConnectionDeps, connectStripe, disconnectStripe, getStripeConnection } from "../domain/connect-stripe.js";
import { listStripeEvents, retryStripeEvent } from "../domain/list-events.js";
import { setPromotionCodes } from "../domain/promotion-codes.js";
import { receiveStripeEvent } from "../domain/receive-event.js";
import { type ReconcileDeps, reconcileStripe } from "../domain/reconcile.js";
import { verifyStripeDelivery } from "../providers/stripe/verify.js";
import { promotionCodesOf } from "../store/customers.js";

export interface IntegrationsServiceDeps extends ConnectionDeps, ReconcileDeps {
  pageTokens: PageTokens;
  /** How long a retry or a reconciliation waits for outcomes when the caller set no deadline. */
  defaultWaitMs?: number;
}

/** Waits end this long before the caller's deadline, so the answer reaches it in time. */
const answerMarginMs = 500;

function waitBudget(fallbackMs: number): number {
  const deadline = currentDeadline();
  if (!deadline) return fallbackMs;
  return Math.max(0, Math.min(fallbackMs, deadline.remainingMs() - answerMarginMs));
}

/** Thin handlers: decode, call one use case, encode. Errors are mapped by the server's interceptor. */
export function createIntegrationsService(deps: IntegrationsServiceDeps): ServiceImpl<typeof IntegrationsService> {
  const defaultWaitMs = deps.defaultWaitMs ?? 10_000;
  return {
    async connectStripe(req) {
      const view = await connectStripe(deps, req.productId, { webhookSecret: req.webhookSecret, apiKey: req.apiKey });
      return { connection: connectionToProto(view) };
    },
    async getStripeConnection(req) {
      return { connection: connectionToProto(await getStripeConnection(deps, req.productId)) };
    },
    async disconnectStripe(req) {
      await disconnectStripe(deps, req.productId);
      return {};
    },
    async receiveStripeEvent(req) {
      return receiveStripeEvent(
        { ...deps, verify: verifyStripeDelivery },
        {
          connectionId: req.connectionId,
          payload: req.payload,
          signature: req.signature,
        },
      );
    },
    async listStripeEvents(req) {
      const page = await listStripeEvents(
        deps,
        req.productId,
        { outcome: req.outcome === undefined ? undefined : enumFilter(outcomeToProto, req.outcome, "outcome") },
        { pageSize: req.pageSize, pageToken: req.pageToken },
      );
      return { events: page.items.map(eventToProto), nextPageToken: page.nextPageToken };
    },
    async retryStripeEvent(req) {
      const event = await retryStripeEvent(deps, req.productId, req.eventId, waitBudget(defaultWaitMs));
      return { event: eventToProto(event) };
    },
    async setPromotionCodes(req) {
      return { codes: await setPromotionCodes(deps.sql, req) };
    },
    async listPromotionCodes(req) {
      return { codes: await promotionCodesOf(deps.sql, req.productId, req.partnershipId) };
    },
    async reconcileStripe(req) {
      const report = await reconcileStripe(deps, req.productId, {
        since: req.since ? timestampDate(req.since) : undefined,
        waitMs: waitBudget(defaultWaitMs),
      });
      return {
        fetched: BigInt(report.fetched),
        new: BigInt(report.new),
        applied: BigInt(report.applied),
        failed: BigInt(report.failed),
      };
    },
  };
}
