import { callTimeout } from "@affiliate/platform";
import { type Payout, PayoutAction, PayoutStatus, type PayoutsService } from "@affiliate/proto/payouts";
import { payoutOf, payoutStatusValue, toPage, toPublicPayout } from "@affiliate/rest-shapes/mappers";
import {
  generatePayoutsBodySchema,
  generatePayoutsResponseSchema,
  invalidPayoutActionMessage,
  listPayoutsQuerySchema,
  type PublicPayout,
  type PublicPayoutAction,
  payoutActionSchema,
  payoutIdParamsSchema,
  payoutListResponseSchema,
  payoutResponseSchema,
  type UpdatePayoutBody,
  updatePayoutBodySchema,
} from "@affiliate/rest-shapes/schemas/payouts";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { HttpError, parseOrThrow } from "../../errors.js";
import { defineRoute } from "../../http/define-route.js";
import type { PartnershipLookup } from "../../partnership-lookup.js";

/** How long POST /api/v1/payouts/generate waits for the payouts service. */
export const generationTimeoutMs = 10 * 60 * 1000;

export interface PayoutsRouteDeps {
  payouts: Client<typeof PayoutsService>;
  lookup: PartnershipLookup;
}

const actionValues: Record<PublicPayoutAction, PayoutAction> = {
  approve: PayoutAction.APPROVE,
  reject: PayoutAction.REJECT,
  mark_paid: PayoutAction.MARK_PAID,
  mark_failed: PayoutAction.MARK_FAILED,
};

/**
 * The action of a PATCH body. A missing or unknown action is spec 7's "Invalid action or payout
 * state": 400 `{ error }`, not the validation envelope. A body that is not an object is the envelope.
 */
function checkAction(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return;
  if (!payoutActionSchema.safeParse((body as { action?: unknown }).action).success) {
    throw new HttpError(400, { error: invalidPayoutActionMessage });
  }
}

/** The PATCH body: its action checked first, answered 400 `{ error }` (spec 7), then its fields. */
function updateOf(body: unknown): UpdatePayoutBody {
  checkAction(body);
  return parseOrThrow(updatePayoutBodySchema, body);
}

const tags: [string] = ["Payouts"];

/**
 * Payouts (spec 2.3, 3.2, 4.10; contract section 8): the payouts service's records, with each
 * one's affiliate composed from partners in one BatchGetPartnerships call per answer.
 */
export async function payoutsRoutes(app: FastifyInstance, { payouts, lookup }: PayoutsRouteDeps) {
  const compose = async (productId: string, list: readonly Payout[]): Promise<PublicPayout[]> => {
    const partnerships = await lookup.partnershipsByIds(
      productId,
      list.map((payout) => payout.partnershipId),
    );
    return list.map((payout) => toPublicPayout(payout, partnerships.get(payout.partnershipId)));
  };

  const one = async (productId: string, payout: Payout, deleted = false) => {
    const partnerships = await lookup.partnershipsByIds(productId, [payout.partnershipId]);
    return { data: toPublicPayout(payout, partnerships.get(payout.partnershipId), { deleted }) };
  };

  defineRoute(app, {
    method: "POST",
    url: "/payouts/generate",
    operationId: "generatePayouts",
    tags,
    summary: "Create the payouts that are due now",
    description:
      "For each active partnership, its approved live commissions not yet in a payout plus its unapplied adjustments: when the net reaches the program's payout_minimum_cents and is above 0, one pending payout links them. Answers only the payouts this call created. Also runs on a schedule (PAYOUT_INTERVAL_MS). No body, or an empty object.",
    access: "management",
    body: generatePayoutsBodySchema,
    bodyRequired: false,
    answers: {
      200: { description: "The payouts created by this call", schema: generatePayoutsResponseSchema },
      400: { description: "A body with fields, or one that is not valid JSON" },
    },
    handler: async ({ request }) => {
      const productId = request.productId;
      // Generation is work in proportion to the program (seconds to minutes for thousands of
      // partnerships), not a lookup: the default 5 s deadline would answer 503 while it goes on,
      // and a client retrying that 503 would start a second generation alongside it.
      const { payouts: created } = await payouts.generatePayouts({ productId }, callTimeout(generationTimeoutMs));
      return { data: await compose(productId, created) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/payouts",
    operationId: "listPayouts",
    tags,
    summary: "List payouts, newest first",
    access: "management",
    query: listPayoutsQuerySchema,
    answers: {
      200: { description: "One page", schema: payoutListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const page = await payouts.listPayouts({
        productId: request.productId,
        status: query.status ? payoutStatusValue(query.status) : PayoutStatus.UNSPECIFIED,
        partnershipId: query.partnership_id,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(await compose(request.productId, page.payouts), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/payouts/:id",
    operationId: "getPayout",
    tags,
    summary: "Read one payout",
    access: "management",
    params: payoutIdParamsSchema,
    pathResources: { id: "Payout" },
    answers: { 200: { description: "The payout", schema: payoutResponseSchema } },
    handler: async ({ params, request }) => {
      const productId = request.productId;
      return one(productId, payoutOf(await payouts.getPayout({ productId, payoutId: params.id })));
    },
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/payouts/:id",
    operationId: "updatePayout",
    tags,
    summary: "Approve, reject, mark paid or mark failed",
    description:
      "approve needs pending or failed; reject needs pending (the payout is deleted and answered with status rejected; a later read is 404); mark_paid needs approved (status completed, paid_at set, reference stored as gateway_transfer_id); mark_failed needs approved (status failed). Another state, or an unknown action: 400 { error }.",
    access: "management",
    params: payoutIdParamsSchema,
    pathResources: { id: "Payout" },
    body: updatePayoutBodySchema,
    parseBody: updateOf,
    answers: {
      200: { description: "The payout after the action", schema: payoutResponseSchema },
      400: {
        description:
          "An unknown action or one the payout's state does not allow ({ error }, e.g. 'Payout must be in approved state to mark as paid'), a bad reference or reason, or an unknown field (validation envelope), or malformed JSON",
      },
    },
    handler: async ({ params, body: { action, reference, reason }, request }) => {
      const productId = request.productId;
      const response = await payouts.updatePayout({
        productId,
        payoutId: params.id,
        action: actionValues[action],
        reference: action === "mark_failed" ? (reference ?? reason) : reference,
      });
      return one(productId, payoutOf(response), response.deleted);
    },
  });
}
