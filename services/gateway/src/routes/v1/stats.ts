import type { LedgerService } from "@affiliate/proto/ledger";
import { periodValue, toPublicStats, toPublicTimeseries } from "@affiliate/rest-shapes/mappers";
import { nestedErrorSchema, validationErrorSchema } from "@affiliate/rest-shapes/schemas/common";
import {
  invalidPeriodMessage,
  type PublicPeriod,
  statsQuerySchema,
  statsResponseSchema,
  timeseriesResponseSchema,
} from "@affiliate/rest-shapes/schemas/stats";
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { HttpError } from "../../errors.js";
import { defineRoute } from "../../http/define-route.js";
import type { PartnershipLookup } from "../../partnership-lookup.js";

export interface StatsRouteDeps {
  ledger: Client<typeof LedgerService>;
  lookup: PartnershipLookup;
}

/**
 * The requested period, `30d` when absent. An invalid one is the spec's one exception to the
 * validation envelope (sections 4.5 and 7): 400 `{ data: { error } }`.
 */
export function periodOf(query: unknown): PublicPeriod {
  const parsed = statsQuerySchema.safeParse(query);
  if (!parsed.success) throw new HttpError(400, { data: { error: invalidPeriodMessage } });
  return parsed.data.period;
}

const tags: [string] = ["Stats"];

export const invalidPeriod = {
  description: `Invalid period; the error is nested under data: "${invalidPeriodMessage}". An unknown query parameter is the validation envelope.`,
  schema: z.union([nestedErrorSchema, validationErrorSchema]),
};

/** The program's KPIs (contract section 10): sums from the ledger, active affiliates from partners. */
export async function statsRoutes(app: FastifyInstance, { ledger, lookup }: StatsRouteDeps) {
  defineRoute(app, {
    method: "GET",
    url: "/stats",
    operationId: "getStats",
    tags,
    summary: "Summary KPIs of a rolling window, with the window before it",
    description:
      "Live activity by occurred_at. Window edges are hour-aligned: the window ends with the current UTC hour (all of it counts: events so far, and any dated later in the hour) and starts on the hour 7, 30, 90 or 365 (12m) days earlier; previous_period is the window of equal length just before it, also hour-aligned. So an answer is read from hourly and daily totals and costs the same at any traffic. active_affiliates counts the partnerships that are active now, whatever the period.",
    access: "management",
    query: statsQuerySchema,
    parseQuery: periodOf,
    answers: { 200: { description: "The summary", schema: statsResponseSchema }, 400: invalidPeriod },
    handler: async ({ query: period, request }) => {
      const productId = request.productId;
      const [stats, activeAffiliates] = await Promise.all([
        ledger.getStats({ productId, period: periodValue(period) }),
        lookup.countActivePartnerships(productId),
      ]);
      return { data: toPublicStats(period, stats, activeAffiliates) };
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/stats/timeseries",
    operationId: "getStatsTimeseries",
    tags,
    summary: "Daily metrics, one point per UTC date",
    description: "Oldest first, ending today: 7, 30, 90 or 365 points. Days without activity are zeros.",
    access: "management",
    query: statsQuerySchema,
    parseQuery: periodOf,
    answers: { 200: { description: "The series", schema: timeseriesResponseSchema }, 400: invalidPeriod },
    handler: async ({ query: period, request }) => {
      const series = await ledger.getTimeseries({ productId: request.productId, period: periodValue(period) });
      return { data: toPublicTimeseries(series) };
    },
  });
}
