import { CommissionStatus, type LedgerService } from "@affiliate/proto/ledger";
import type { PartnersService } from "@affiliate/proto/partners";
import { PayoutLineKind, PayoutStatus, type PayoutsService } from "@affiliate/proto/payouts";
import {
  ContractViolation,
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
  toPayoutLine,
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
    summary: "The affiliate's payouts, newest first",
    access: "affiliate",
    query: affiliatePayoutsQuerySchema,
    answers: {
      200: { description: "One page", schema: affiliatePayoutListResponseSchema },
      400: { description: "Bad status, limit outside 1-100, a cursor not issued, or an unknown query parameter" },
    },
    handler: async ({ query, request }) => {
      const page = await payouts.listPayouts({
        productId: request.productId,
        partnershipId: request.partnershipId,
        status: query.status ? payoutStatusValue(query.status) : PayoutStatus.UNSPECIFIED,
        pageSize: query.limit,
        pageToken: query.cursor ?? "",
      });
      return toPage(page.payouts.map(toAffiliatePayout), page.nextPageToken);
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/payouts/:id",
    operationId: "getAffiliatePayout",
    tags,
    summary: "One of the affiliate's payouts, line by line",
    description: `Its lines (commissions, then adjustments: each clawback of a refunded commission that was already paid, with the refund's reason) sum exactly to amount_cents. ${scopeNote}`,
    access: "affiliate",
    params: affiliatePayoutIdParamsSchema,
    pathResources: { id: "Payout" },
    answers: { 200: { description: "The payout with its lines", schema: affiliatePayoutResponseSchema } },
    handler: async ({ params, request }) => {
      const { productId, partnershipId } = request;
      const answer = await payouts.getPayout({ productId, payoutId: params.id, partnershipId, includeLines: true });
      const payout = payoutOf(answer);
      const clawedBack = [
        ...new Set(
          answer.lines.filter((line) => line.kind === PayoutLineKind.ADJUSTMENT).map((line) => line.commissionId),
        ),
      ];
      // The reason of each refund an adjustment claws back: the ledger keeps it on the commission.
      const reasons = new Map<string, string>();
      await Promise.all(
        clawedBack.map(async (commissionId) => {
          const commission = commissionOf(await ledger.getCommission({ productId, commissionId }));
          if (commission.reason) reasons.set(commissionId, commission.reason);
        }),
      );
      const lines = answer.lines.map((line) => toPayoutLine(line, reasons));
      const total = answer.lines.reduce((sum, line) => sum + line.amountCents, 0n);
      if (total !== payout.amountCents) {
        throw new ContractViolation(`payout ${payout.id}: lines sum to ${total}, amount is ${payout.amountCents}`);
      }
      return { data: { ...toAffiliatePayout(payout), lines } };
    },
  });
}
