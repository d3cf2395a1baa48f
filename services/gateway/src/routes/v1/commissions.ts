import {
  type Commission,
  CommissionAction,
  CommissionStatus,
  type LedgerService,
  ReviewDecision,
} from "@affiliate/proto/ledger";
import {
  commissionOf,
  commissionStatusValue,
  toPage,
  toPublicCommission,
  toPublicCommissionPreview,
  toTrackRequest,
} from "@affiliate/rest-shapes/mappers";
import {
  commissionIdParamsSchema,
  commissionListResponseSchema,
  commissionResponseSchema,
  listCommissionsQuerySchema,
  type PublicCommission,
  reviewCommissionBodySchema,
  updateCommissionBodySchema,
} from "@affiliate/rest-shapes/schemas/commissions";
import {
  previewCommissionsBodySchema,
  previewCommissionsResponseSchema,
} from "@affiliate/rest-shapes/schemas/tracking";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { bearerTokenOf } from "../../auth/authenticate.js";
import { defineRoute } from "../../http/define-route.js";
import type { PartnershipLookup } from "../../partnership-lookup.js";

export interface CommissionsRouteDeps {
  ledger: Client<typeof LedgerService>;
  lookup: PartnershipLookup;
}

const tags: [string] = ["Commissions"];

const actionValues = { approve: CommissionAction.APPROVE, reject: CommissionAction.REJECT } as const;

/**
 * The key a decision is kept with, masked as Stripe shows keys: its kind and its last four
 * characters, enough to tell a merchant's keys apart, never enough to use one.
 */
export function maskedKey(key: string | string[] | undefined): string {
  const value = typeof key === "string" ? key : "";
  const kind = /^(sk_live_|sk_test_|[a-z]+_)/.exec(value)?.[1] ?? "";
  return `${kind}…${value.slice(-4)}`;
}

/**
 * Commissions (spec 2.2, contract section 6): the ledger's records, with each one's affiliate
 * composed from partners in one BatchGetPartnerships call per answer, however many items it has.
 */
export async function commissionsRoutes(app: FastifyInstance, { ledger, lookup }: CommissionsRouteDeps) {
  const compose = async (productId: string, commissions: readonly Commission[]): Promise<PublicCommission[]> => {
    const partnerships = await lookup.partnershipsByIds(
      productId,
      commissions.map((commission) => commission.partnershipId),
    );
    return commissions.map((commission) => toPublicCommission(commission, partnerships.get(commission.partnershipId)));
  };

  const one = async (productId: string, commission: Commission) => {
    const partnerships = await lookup.partnershipsByIds(productId, [commission.partnershipId]);
    return { data: toPublicCommission(commission, partnerships.get(commission.partnershipId)) };
  };

  defineRoute(app, {
    method: "GET",
    url: "/commissions",
    operationId: "listCommissions",
    tags,
    summary: "List commissions, newest first",
    access: "management",
    query: listCommissionsQuerySchema,
    answers: {
      200: { description: "One page", schema: commissionListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const page = await ledger.listCommissions({
        productId: request.productId,
        status: query.status ? commissionStatusValue(query.status) : CommissionStatus.UNSPECIFIED,
        partnershipId: query.partnership_id,
        payoutId: query.payout_id,
        flagged: query.flagged,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(await compose(request.productId, page.commissions), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/commissions/:id",
    operationId: "getCommission",
    tags,
    summary: "Read one commission, with its payout link and tier data",
    access: "management",
    params: commissionIdParamsSchema,
    pathResources: { id: "Commission" },
    answers: { 200: { description: "The commission", schema: commissionResponseSchema } },
    handler: async ({ params, request }) => {
      const productId = request.productId;
      return one(productId, commissionOf(await ledger.getCommission({ productId, commissionId: params.id })));
    },
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/commissions/:id",
    operationId: "updateCommission",
    tags,
    summary: "Approve or reject a commission",
    description:
      "approve: pending -> approved (ends the hold early). reject: pending, or approved without a payout, -> rejected, together with its level-2 child. Anything else is 400 { error }.",
    access: "management",
    params: commissionIdParamsSchema,
    pathResources: { id: "Commission" },
    body: updateCommissionBodySchema,
    answers: {
      200: { description: "The commission after the change", schema: commissionResponseSchema },
      400: {
        description:
          "Validation failed, malformed JSON, or an action the commission's state does not allow ({ error })",
      },
    },
    handler: async ({ params, body, request }) => {
      const productId = request.productId;
      const response = await ledger.updateCommission({
        productId,
        commissionId: params.id,
        action: actionValues[body.action],
        reason: body.reason,
      });
      return one(productId, commissionOf(response));
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/commissions/:id/review",
    operationId: "reviewCommission",
    tags,
    summary: "Decide a commission held for review",
    description:
      "For a commission a fraud signal flagged (`hold_reason: review`, contract section 18). approve: the review hold is lifted; approved at once when its hold period is over, else when it ends. reject: rejected with its level-2 child; the payment stays recorded. The decision, the note and the (masked) key that made it are kept on the commission (`review`) and sent as `commission.reviewed`. A commission that is not awaiting review is 400 naming its state (`details.status`, `details.hold_reason`); one already reviewed is 409 with the first decision (`details.review`).",
    access: "management",
    params: commissionIdParamsSchema,
    pathResources: { id: "Commission" },
    body: reviewCommissionBodySchema,
    answers: {
      200: { description: "The commission after the decision", schema: commissionResponseSchema },
      400: {
        description: "Validation failed, malformed JSON, or the commission is not awaiting review ({ error, details })",
      },
      409: { description: "Already reviewed ({ error, details: { review } })" },
    },
    handler: async ({ params, body, request }) => {
      const productId = request.productId;
      const response = await ledger.reviewCommission({
        productId,
        commissionId: params.id,
        decision: body.decision === "approve" ? ReviewDecision.APPROVE : ReviewDecision.REJECT,
        note: body.note ?? "",
        // The merchant's console signs in with a session token (Bearer cst_…): that is the key then.
        key: maskedKey(request.consoleSession ? bearerTokenOf(request) : request.headers["x-api-key"]),
      });
      return one(productId, commissionOf(response));
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/commissions/preview",
    operationId: "previewCommissions",
    tags,
    summary: "What a payment would earn now, and why, writing nothing",
    description:
      "Takes a payment as POST /events does (`type`, if given, must be `payment`; `external_id` is ignored), attributes it and applies the commission rules exactly as recording it would: the same payment recorded next earns exactly these commissions (absent other changes in between). Nothing is written, counted or emitted. `commission_skipped` says why an attributed payment would earn nothing.",
    access: "management",
    body: previewCommissionsBodySchema,
    answers: {
      200: { description: "The commissions the payment would create", schema: previewCommissionsResponseSchema },
      400: { description: "Validation failed or malformed JSON" },
    },
    handler: async ({ body, request }) => {
      const { external_id: _ignored, ...payment } = body;
      const preview = await ledger.previewCommissions({
        payment: { productId: request.productId, testMode: false, ...toTrackRequest({ ...payment, type: "payment" }) },
      });
      return { data: toPublicCommissionPreview(preview) };
    },
  });
}
