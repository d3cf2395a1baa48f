import { callTimeout } from "@affiliate/platform";
import { type Payout, PayoutAction, PayoutStatus, type PayoutsService } from "@affiliate/proto/payouts";
import { payoutOf, payoutStatusValue, toPublicPayout } from "@affiliate/rest-shapes/mappers";
import { authenticatedErrors, bodyErrors, errorResponses } from "@affiliate/rest-shapes/schemas/common";
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
  updatePayoutBodySchema,
} from "@affiliate/rest-shapes/schemas/payouts";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { HttpError, parseOrThrow, pathIdOrThrow } from "../../errors.js";
import type { PartnersDirectory } from "../../partners-directory.js";

/** How long POST /api/v1/payouts/generate waits for the payouts service. */
export const generationTimeoutMs = 10 * 60 * 1000;

export interface PayoutsRouteDeps {
  payouts: Client<typeof PayoutsService>;
  directory: PartnersDirectory;
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

/**
 * Payouts (spec 2.3, 3.2, 4.10; contract section 8): the payouts service's records, with each
 * one's affiliate composed from partners in one BatchGetPartnerships call per answer.
 */
export async function payoutsRoutes(app: FastifyInstance, { payouts, directory }: PayoutsRouteDeps) {
  const compose = async (productId: string, list: readonly Payout[]): Promise<PublicPayout[]> => {
    const partnerships = await directory.partnershipsByIds(
      productId,
      list.map((payout) => payout.partnershipId),
    );
    return list.map((payout) => toPublicPayout(payout, partnerships.get(payout.partnershipId)));
  };

  const one = async (productId: string, payout: Payout, deleted = false) => {
    const partnerships = await directory.partnershipsByIds(productId, [payout.partnershipId]);
    return { data: toPublicPayout(payout, partnerships.get(payout.partnershipId), { deleted }) };
  };

  app.post("/payouts/generate", async (request) => {
    parseOrThrow(generatePayoutsBodySchema, request.body);
    const productId = request.productId;
    // Generation is work in proportion to the program (seconds to minutes for thousands of
    // partnerships), not a lookup: the default 5 s deadline would answer 503 while it goes on,
    // and a client retrying that 503 would start a second generation alongside it.
    const { payouts: created } = await payouts.generatePayouts({ productId }, callTimeout(generationTimeoutMs));
    return { data: await compose(productId, created) };
  });

  app.get("/payouts", async (request) => {
    const query = parseOrThrow(listPayoutsQuerySchema, request.query);
    const page = await payouts.listPayouts({
      productId: request.productId,
      status: query.status ? payoutStatusValue(query.status) : PayoutStatus.UNSPECIFIED,
      partnershipId: query.partnership_id,
      pageSize: query.limit,
      pageToken: query.cursor ?? "",
    });
    return {
      data: await compose(request.productId, page.payouts),
      pagination: { next_cursor: page.nextPageToken || null, has_more: page.nextPageToken !== "" },
    };
  });

  app.get("/payouts/:id", async (request) => {
    const id = pathIdOrThrow(payoutIdParamsSchema, request.params, "Payout");
    const productId = request.productId;
    return one(productId, payoutOf(await payouts.getPayout({ productId, payoutId: id })));
  });

  app.patch("/payouts/:id", async (request) => {
    const id = pathIdOrThrow(payoutIdParamsSchema, request.params, "Payout");
    checkAction(request.body);
    const { action, reference, reason } = parseOrThrow(updatePayoutBodySchema, request.body);
    const productId = request.productId;
    const response = await payouts.updatePayout({
      productId,
      payoutId: id,
      action: actionValues[action],
      reference: action === "mark_failed" ? (reference ?? reason) : reference,
    });
    return one(productId, payoutOf(response), response.deleted);
  });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

const listErrors = {
  400: { ...errorResponses.validation, description: "Bad status, limit outside 1-100, or a cursor not issued" },
  ...authenticatedErrors,
};

export const payoutsPaths: ZodOpenApiPathsObject = {
  "/api/v1/payouts/generate": {
    post: {
      operationId: "generatePayouts",
      tags: ["Payouts"],
      summary: "Create the payouts that are due now",
      description:
        "For each active partnership, its approved live commissions not yet in a payout plus its unapplied adjustments: when the net reaches the program's payout_minimum_cents and is above 0, one pending payout links them. Answers only the payouts this call created. Also runs on a schedule (PAYOUT_INTERVAL_MS). No body, or an empty object.",
      requestBody: { required: false, ...json(generatePayoutsBodySchema) },
      responses: {
        200: { description: "The payouts created by this call", ...json(generatePayoutsResponseSchema) },
        400: { ...errorResponses.badRequest, description: "A body with fields, or one that is not valid JSON" },
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
  },
  "/api/v1/payouts": {
    get: {
      operationId: "listPayouts",
      tags: ["Payouts"],
      summary: "List payouts, newest first",
      requestParams: { query: listPayoutsQuerySchema },
      responses: { 200: { description: "One page", ...json(payoutListResponseSchema) }, ...listErrors },
    },
  },
  "/api/v1/payouts/{id}": {
    get: {
      operationId: "getPayout",
      tags: ["Payouts"],
      summary: "Read one payout",
      requestParams: { path: payoutIdParamsSchema },
      responses: {
        200: { description: "The payout", ...json(payoutResponseSchema) },
        404: errorResponses[404],
        ...authenticatedErrors,
      },
    },
    patch: {
      operationId: "updatePayout",
      tags: ["Payouts"],
      summary: "Approve, reject, mark paid or mark failed",
      description:
        "approve needs pending or failed; reject needs pending (the payout is deleted and answered with status rejected; a later read is 404); mark_paid needs approved (status completed, paid_at set, reference stored as gateway_transfer_id); mark_failed needs approved (status failed). Another state, or an unknown action: 400 { error }.",
      requestParams: { path: payoutIdParamsSchema },
      requestBody: { required: true, ...json(updatePayoutBodySchema) },
      responses: {
        200: { description: "The payout after the action", ...json(payoutResponseSchema) },
        400: {
          ...errorResponses.badRequest,
          description:
            "An unknown action or one the payout's state does not allow ({ error }, e.g. 'Payout must be in approved state to mark as paid'), a bad reference or reason (validation envelope), or malformed JSON",
        },
        404: errorResponses[404],
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
  },
};
