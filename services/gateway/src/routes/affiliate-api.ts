import { inBatches } from "@affiliate/platform";
import { CommissionStatus, type LedgerService } from "@affiliate/proto/ledger";
import type { PartnersService } from "@affiliate/proto/partners";
import { type Payout, type PayoutLine, PayoutStatus, type PayoutsService } from "@affiliate/proto/payouts";
import {
  clawedBackCommissionIds,
  commissionOf,
  commissionStatusValue,
  partnershipOf,
  payoutOf,
  payoutStatusValue,
  periodValue,
  toAffiliateCommission,
  toAffiliateMe,
  toAffiliatePayout,
  toPage,
  toPublicTimeseries,
} from "@affiliate/rest-shapes/mappers";
import { required } from "@affiliate/rest-shapes/mappers/common";
import {
  affiliateCommissionIdParamsSchema,
  affiliateCommissionListResponseSchema,
  affiliateCommissionSchema,
  affiliateCommissionsQuerySchema,
  affiliateMeResponseSchema,
  affiliatePayoutIdParamsSchema,
  affiliatePayoutListResponseSchema,
  affiliatePayoutResponseSchema,
  affiliatePayoutsQuerySchema,
  affiliateStatsResponseSchema,
} from "@affiliate/rest-shapes/schemas/affiliate-api";
import { statsQuerySchema } from "@affiliate/rest-shapes/schemas/stats";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { HttpError } from "../errors.js";
import { defineRoute } from "../http/define-route.js";
import { invalidPeriod, periodOf } from "./v1/stats.js";

export interface AffiliateApiDeps {
  partners: Client<typeof PartnersService>;
  ledger: Client<typeof LedgerService>;
  payouts: Client<typeof PayoutsService>;
}

const tags: [string] = ["Affiliate API"];

const scopeNote = "Only the token's own partnership: another partnership's id is 404, as a missing one.";

/** BatchGetCommissions takes at most this many ids per call. */
const batchGetCommissionsLimit = 100;

const payoutLinesNote =
  "Each payout's lines (commissions, then adjustments: each clawback of a refunded commission that was already paid, with the refund's reason) sum exactly to its amount_cents.";

/**
 * Payouts as their affiliate sees them, line by line: the one way both payout routes describe
 * lines. An adjustment names the reason of the refund it claws back, which the ledger keeps on
 * the commission: the reasons of all the payouts' clawed-back commissions are read together,
 * one BatchGetCommissions per 100 commissions, never one call per line. A commission the ledger
 * no longer answers leaves its line without a reason, never the line out.
 */
async function describePayouts(
  ledger: Client<typeof LedgerService>,
  productId: string,
  items: readonly { payout: Payout; lines: readonly PayoutLine[] | undefined }[],
) {
  const clawedBack = [...new Set(items.flatMap(({ lines }) => clawedBackCommissionIds(lines ?? [])))];
  const answers = await Promise.all(
    inBatches(clawedBack, batchGetCommissionsLimit).map((commissionIds) =>
      ledger.batchGetCommissions({ productId, commissionIds }),
    ),
  );
  const reasons = new Map<string, string>();
  for (const { commissions } of answers) {
    for (const [id, commission] of Object.entries(commissions)) {
      if (commission.reason) reasons.set(id, commission.reason);
    }
  }
  return items.map(({ payout, lines }) =>
    toAffiliatePayout(payout, required(lines, `lines of payout ${payout.id}`, "payouts"), reasons),
  );
}

/**
 * The affiliate API (contract section 14): each route is the merchant route's read, scoped to the
 * one partnership the bearer token reads (request.partnershipId, set by the token check), never a
 * new query path into a service's data.
 */
export async function affiliateApiRoutes(app: FastifyInstance, { partners, ledger, payouts }: AffiliateApiDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/me",
    operationId: "getAffiliateMe",
    tags,
    summary: "The affiliate's partnership, link and terms",
    access: "affiliate",
    answers: { 200: { description: "The partnership as its affiliate sees it", schema: affiliateMeResponseSchema } },
    handler: async ({ request }) => {
      const { productId, partnershipId } = request;
      const [partnership, program] = await Promise.all([
        partners.getPartnership({ productId, partnershipId }),
        partners.getProgram({ productId }),
      ]);
      return { data: toAffiliateMe(partnershipOf(partnership), required(program.program, "program")) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/stats",
    operationId: "getAffiliateStats",
    tags,
    summary: "The affiliate's figures, against the previous period, with a daily series",
    description:
      "The figures of GET /api/v1/stats for this partnership alone: windows end with the current UTC hour (their edges are whole hours), `previous_period` is the window of equal length before, `timeseries` one point per UTC date of the period. Read from rollups: the cost does not grow with the number of events.",
    access: "affiliate",
    query: statsQuerySchema,
    parseQuery: periodOf,
    answers: { 200: { description: "The figures", schema: affiliateStatsResponseSchema }, 400: invalidPeriod },
    handler: async ({ query: period, request }) => {
      const { productId, partnershipId } = request;
      const value = periodValue(period);
      const [stats, series] = await Promise.all([
        ledger.getStats({ productId, period: value, partnershipId }),
        ledger.getTimeseries({ productId, period: value, partnershipId }),
      ]);
      const current = required(stats.current, "stats.current", "ledger");
      const previous = required(stats.previous, "stats.previous", "ledger");
      const metrics = (m: typeof current) => ({
        clicks: Number(m.clicks),
        signups: Number(m.signups),
        conversions: Number(m.conversions),
        revenue_cents: m.revenueCents,
        commissions_cents: m.commissionsCents,
      });
      return {
        data: {
          period,
          ...metrics(current),
          conversion_rate: stats.conversionRate,
          previous_period: metrics(previous),
          timeseries: toPublicTimeseries(series),
        },
      };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/commissions",
    operationId: "listAffiliateCommissions",
    tags,
    summary: "The affiliate's commissions, newest first",
    description: "Customers' emails are masked (j***@example.com).",
    access: "affiliate",
    query: affiliateCommissionsQuerySchema,
    answers: {
      200: { description: "One page", schema: affiliateCommissionListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const page = await ledger.listCommissions({
        productId: request.productId,
        partnershipId: request.partnershipId,
        status: query.status ? commissionStatusValue(query.status) : CommissionStatus.UNSPECIFIED,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(page.commissions.map(toAffiliateCommission), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/commissions/:id",
    operationId: "getAffiliateCommission",
    tags,
    summary: "One of the affiliate's commissions",
    description: scopeNote,
    access: "affiliate",
    params: affiliateCommissionIdParamsSchema,
    pathResources: { id: "Commission" },
    answers: { 200: { description: "The commission", schema: z.object({ data: affiliateCommissionSchema }) } },
    handler: async ({ params, request }) => {
      const commission = commissionOf(
        await ledger.getCommission({ productId: request.productId, commissionId: params.id }),
      );
      if (commission.partnershipId !== request.partnershipId) {
        throw new HttpError(404, { error: `Commission ${params.id} not found` });
      }
      return { data: toAffiliateCommission(commission) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/payouts",
    operationId: "listAffiliatePayouts",
    tags,
    summary: "The affiliate's payouts, newest first, line by line",
    description: payoutLinesNote,
    access: "affiliate",
    query: affiliatePayoutsQuerySchema,
    answers: {
      200: { description: "One page", schema: affiliatePayoutListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const { productId, partnershipId } = request;
      const page = await payouts.listPayouts({
        productId,
        partnershipId,
        status: query.status ? payoutStatusValue(query.status) : PayoutStatus.UNSPECIFIED,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
        includeLines: true,
      });
      const described = await describePayouts(
        ledger,
        productId,
        page.payouts.map((payout) => ({ payout, lines: page.lines[payout.id]?.lines })),
      );
      return toPage(described, page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/payouts/:id",
    operationId: "getAffiliatePayout",
    tags,
    summary: "One of the affiliate's payouts, line by line",
    description: `${payoutLinesNote} ${scopeNote}`,
    access: "affiliate",
    params: affiliatePayoutIdParamsSchema,
    pathResources: { id: "Payout" },
    answers: { 200: { description: "The payout with its lines", schema: affiliatePayoutResponseSchema } },
    handler: async ({ params, request }) => {
      const { productId, partnershipId } = request;
      const answer = await payouts.getPayout({ productId, payoutId: params.id, partnershipId, includeLines: true });
      const [payout] = await describePayouts(ledger, productId, [{ payout: payoutOf(answer), lines: answer.lines }]);
      return { data: payout };
    },
  });
}
