import { type GetStatsResponse, type GetTimeseriesResponse, type Metrics, Period } from "@affiliate/proto/ledger";
import type { PublicPeriod, PublicStats, PublicTimeseriesPoint } from "../schemas/stats.js";
import { ContractViolation, required } from "./common.js";

const periodValues: Record<PublicPeriod, Period> = {
  "7d": Period.PERIOD_7D,
  "30d": Period.PERIOD_30D,
  "90d": Period.PERIOD_90D,
  "12m": Period.PERIOD_12M,
};

export function periodValue(name: PublicPeriod): Period {
  return periodValues[name];
}

function toPublicMetrics(metrics: Metrics | undefined) {
  const { clicks, signups, conversions, revenueCents, commissionsCents } = required(metrics, "metrics", "ledger");
  return {
    clicks: Number(clicks),
    signups: Number(signups),
    conversions: Number(conversions),
    revenue_cents: revenueCents,
    commissions_cents: commissionsCents,
  };
}

export function toPublicStats(period: PublicPeriod, stats: GetStatsResponse, activeAffiliates: number): PublicStats {
  return {
    period,
    ...toPublicMetrics(stats.current),
    conversion_rate: stats.conversionRate,
    active_affiliates: activeAffiliates,
    previous_period: toPublicMetrics(stats.previous),
  };
}

const dayMs = 24 * 3600 * 1000;

/** The ledger's columns as the public points: day i is first_date plus i days. */
export function toPublicTimeseries(response: GetTimeseriesResponse): PublicTimeseriesPoint[] {
  const { firstDate, clicks, signups, conversions, revenueCents, commissionsCents } = response;
  const days = clicks.length;
  const first = Date.parse(`${firstDate}T00:00:00Z`);
  if ([signups, conversions, revenueCents, commissionsCents].some((column) => column.length !== days)) {
    throw new ContractViolation("time series columns of different lengths in the ledger response");
  }
  if (days > 0 && Number.isNaN(first))
    throw new ContractViolation(`time series first_date "${firstDate}" is not a date`);
  return Array.from({ length: days }, (_, i) => ({
    date: new Date(first + i * dayMs).toISOString().slice(0, 10),
    clicks: Number(clicks[i]),
    signups: Number(signups[i]),
    conversions: Number(conversions[i]),
    revenue_cents: revenueCents[i] as bigint,
    commissions_cents: commissionsCents[i] as bigint,
  }));
}
