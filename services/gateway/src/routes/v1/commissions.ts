import { type Commission, CommissionAction, CommissionStatus, type LedgerService } from "@affiliate/proto/ledger";
import { commissionOf, commissionStatusValue, toPublicCommission } from "@affiliate/rest-shapes/mappers";
import {
  commissionIdParamsSchema,
  commissionListResponseSchema,
  commissionResponseSchema,
  listCommissionsQuerySchema,
  type PublicCommission,
  updateCommissionBodySchema,
} from "@affiliate/rest-shapes/schemas/commissions";
import { authenticatedErrors, bodyErrors, errorResponses } from "@affiliate/rest-shapes/schemas/common";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { ZodOpenApiPathsObject } from "zod-openapi";
import { parseOrThrow, pathIdOrThrow } from "../../errors.js";
import type { PartnersDirectory } from "../../partners-directory.js";

export interface CommissionsRouteDeps {
  ledger: Client<typeof LedgerService>;
  directory: PartnersDirectory;
}

const actionValues = { approve: CommissionAction.APPROVE, reject: CommissionAction.REJECT } as const;

/**
 * Commissions (spec 2.2, contract section 6): the ledger's records, with each one's affiliate
 * composed from partners in one BatchGetPartnerships call per answer, however many items it has.
 */
export async function commissionsRoutes(app: FastifyInstance, { ledger, directory }: CommissionsRouteDeps) {
  const compose = async (productId: string, commissions: readonly Commission[]): Promise<PublicCommission[]> => {
    const partnerships = await directory.partnershipsByIds(
      productId,
      commissions.map((commission) => commission.partnershipId),
    );
    return commissions.map((commission) => toPublicCommission(commission, partnerships.get(commission.partnershipId)));
  };

  const one = async (productId: string, commission: Commission) => {
    const partnerships = await directory.partnershipsByIds(productId, [commission.partnershipId]);
    return { data: toPublicCommission(commission, partnerships.get(commission.partnershipId)) };
  };

  app.get("/commissions", async (request) => {
    const query = parseOrThrow(listCommissionsQuerySchema, request.query);
    const page = await ledger.listCommissions({
      productId: request.productId,
      status: query.status ? commissionStatusValue(query.status) : CommissionStatus.UNSPECIFIED,
      partnershipId: query.partnership_id,
      payoutId: query.payout_id,
      pageSize: query.limit,
      pageToken: query.cursor ?? "",
    });
    return {
      data: await compose(request.productId, page.commissions),
      pagination: { next_cursor: page.nextPageToken || null, has_more: page.nextPageToken !== "" },
    };
  });

  app.get("/commissions/:id", async (request) => {
    const id = pathIdOrThrow(commissionIdParamsSchema, request.params, "Commission");
    const productId = request.productId;
    return one(productId, commissionOf(await ledger.getCommission({ productId, commissionId: id })));
  });

  app.patch("/commissions/:id", async (request) => {
    const id = pathIdOrThrow(commissionIdParamsSchema, request.params, "Commission");
    const { action, reason } = parseOrThrow(updateCommissionBodySchema, request.body);
    const productId = request.productId;
    const response = await ledger.updateCommission({
      productId,
      commissionId: id,
      action: actionValues[action],
      reason,
    });
    return one(productId, commissionOf(response));
  });
}

const json = <S>(schema: S) => ({ content: { "application/json": { schema } } });

export const commissionsPaths: ZodOpenApiPathsObject = {
  "/api/v1/commissions": {
    get: {
      operationId: "listCommissions",
      tags: ["Commissions"],
      summary: "List commissions, newest first",
      requestParams: { query: listCommissionsQuerySchema },
      responses: {
        200: { description: "One page", ...json(commissionListResponseSchema) },
        400: { ...errorResponses.validation, description: "Bad status, limit outside 1-100, or a cursor not issued" },
        ...authenticatedErrors,
      },
    },
  },
  "/api/v1/commissions/{id}": {
    get: {
      operationId: "getCommission",
      tags: ["Commissions"],
      summary: "Read one commission, with its payout link and tier data",
      requestParams: { path: commissionIdParamsSchema },
      responses: {
        200: { description: "The commission", ...json(commissionResponseSchema) },
        404: errorResponses[404],
        ...authenticatedErrors,
      },
    },
    patch: {
      operationId: "updateCommission",
      tags: ["Commissions"],
      summary: "Approve or reject a commission",
      description:
        "approve: pending -> approved (ends the hold early). reject: pending, or approved without a payout, -> rejected, together with its level-2 child. Anything else is 400 { error }.",
      requestParams: { path: commissionIdParamsSchema },
      requestBody: { required: true, ...json(updateCommissionBodySchema) },
      responses: {
        200: { description: "The commission after the change", ...json(commissionResponseSchema) },
        400: {
          ...errorResponses.badRequest,
          description:
            "Validation failed, malformed JSON, or an action the commission's state does not allow ({ error })",
        },
        404: errorResponses[404],
        ...authenticatedErrors,
        ...bodyErrors,
      },
    },
  },
};
