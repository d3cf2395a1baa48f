import { z } from "zod";
import { centsSumSchema } from "./common.js";

export const periodSchema = z.enum(["7d", "30d", "90d", "12m"]).meta({
  id: "Period",
  description:
    "A rolling window of 7, 30 or 90 days, or 12m (365 days), ending with the current UTC hour: its edges are whole hours.",
});

export type PublicPeriod = z.output<typeof periodSchema>;

export const invalidPeriodMessage = "Invalid period: must be 7d, 30d, 90d or 12m";

export const statsQuerySchema = z.object({ period: periodSchema.default("30d") });

const count = z.int().min(0);

const metricsShape = {
  clicks: count.meta({ description: "Live clicks." }),
  signups: count.meta({ description: "Live signups." }),
  conversions: count.meta({ description: "Live attributed payments." }),
  revenue_cents: centsSumSchema.meta({ description: "The amounts of those payments." }),
  commissions_cents: centsSumSchema.meta({
    description: "Current amounts of both levels' commissions from those payments, rejected excluded.",
  }),
};

export const statsSchema = z
  .object({
    period: periodSchema.meta({ description: "The requested period, echoed." }),
    ...metricsShape,
    conversion_rate: z.number().min(0).meta({ description: "conversions / clicks; 0 when there are no clicks." }),
    active_affiliates: count.meta({ description: "Partnerships of the program that are active now." }),
    previous_period: z.object(metricsShape).meta({
      description: "The same metrics for the window of equal length just before this one (its edges whole hours too).",
    }),
  })
  .meta({ id: "Stats" });

export const timeseriesPointSchema = z
  .object({
    date: z.iso.date().meta({ description: "A UTC date, YYYY-MM-DD." }),
    ...metricsShape,
  })
  .meta({ id: "TimeseriesPoint" });

export const statsResponseSchema = z.object({ data: statsSchema });
export const timeseriesResponseSchema = z.object({
  data: z
    .array(timeseriesPointSchema)
    .meta({ description: "One point per UTC date, oldest first, ending today; days without activity are zeros." }),
});

export type PublicStats = z.output<typeof statsSchema>;
export type PublicTimeseriesPoint = z.output<typeof timeseriesPointSchema>;
