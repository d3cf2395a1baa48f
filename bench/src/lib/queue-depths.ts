import { scrapeMetrics, sumOf } from "@affiliate/testing";
import type { Sql } from "postgres";

/** Everything the mesh still has to do for work already accepted, at one moment. */
export interface QueueDepths {
  /** Outbox rows committed and not yet published, per schema. */
  outbox: Record<string, number>;
  /**
   * JetStream events not yet handled, per service: its durable consumers' `num_pending` (not yet
   * delivered) plus `num_ack_pending` (delivered, not yet acknowledged), from its /metrics.
   * Undefined for a service whose scrape failed (restarting).
   */
  consumerLag: Record<string, number | undefined>;
  /** Webhook deliveries due and not yet finished, and how long the oldest of them has been due. */
  deliveriesDue: number;
  oldestDeliveryDueSeconds: number;
  /** Emails due and not yet sent. */
  emailsDue: number;
}

/**
 * Reads the mesh's queues: the outboxes and the notifier's job tables by read-only SQL (each an
 * index read of due rows, or a count of a table its relay keeps near empty), the consumers'
 * lag from the services' metrics endpoints. `metricsUrls` is read at every call, so a restarted
 * service is scraped where it now listens.
 */
export function queueProbe(sql: Sql, metricsUrls: () => Record<string, string>): () => Promise<QueueDepths> {
  let outboxSchemas: Promise<string[]> | undefined;
  return async () => {
    outboxSchemas ??= sql<{ schema: string }[]>`
      select table_schema as schema from information_schema.tables where table_name = 'outbox' order by 1`.then(
      (rows) => rows.map((row) => row.schema),
    );
    const schemas = await outboxSchemas;
    const [outboxRows, [deliveries], [emails], consumerLag] = await Promise.all([
      schemas.length === 0
        ? Promise.resolve([])
        : sql.unsafe<{ schema: string; events: number }[]>(
            schemas
              .map((schema) => `select '${schema}' as schema, count(*)::int as events from "${schema}".outbox`)
              .join(" union all "),
          ),
      sql<{ due: number; oldestSeconds: number }[]>`
        select count(*)::int as due,
               coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as "oldestSeconds"
        from notifier.deliveries where next_attempt_at <= now()`,
      sql<{ due: number }[]>`select count(*)::int as due from notifier.emails where next_attempt_at <= now()`,
      consumerLagByService(metricsUrls()),
    ]);
    return {
      outbox: Object.fromEntries(outboxRows.map((row) => [row.schema, row.events])),
      consumerLag,
      deliveriesDue: deliveries?.due ?? 0,
      oldestDeliveryDueSeconds: deliveries?.oldestSeconds ?? 0,
      emailsDue: emails?.due ?? 0,
    };
  };
}

async function consumerLagByService(urls: Record<string, string>): Promise<Record<string, number | undefined>> {
  const entries = await Promise.all(
    Object.entries(urls).map(async ([service, url]): Promise<[string, number | undefined]> => {
      try {
        const { samples } = await scrapeMetrics(url);
        return [service, sumOf(samples, "consumer_pending_events") + sumOf(samples, "consumer_unacknowledged_events")];
      } catch {
        return [service, undefined];
      }
    }),
  );
  return Object.fromEntries(entries);
}

/** Sum of the outboxes' backlogs. */
export const outboxTotal = (depths: QueueDepths) => Object.values(depths.outbox).reduce((sum, n) => sum + n, 0);

/** Sum of the consumers' lag; NaN when a service could not be scraped. */
export const consumerLagTotal = (depths: QueueDepths) =>
  Object.values(depths.consumerLag).reduce<number>((sum, n) => sum + (n ?? Number.NaN), 0);

/** Nothing left anywhere: published, consumed, delivered and sent. */
export function drained(depths: QueueDepths): boolean {
  return (
    outboxTotal(depths) === 0 && consumerLagTotal(depths) === 0 && depths.deliveriesDue === 0 && depths.emailsDue === 0
  );
}
