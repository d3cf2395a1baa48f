import type { BenchContext } from "../lib/context.js";
import { type LatencySummary, summarize } from "../lib/latency.js";
import { fmt, printTable } from "../lib/table.js";

interface BulkResponse {
  summary: { total: number; created: number; joined: number; reactivated: number; failed: number };
}

export interface BulkRegistrationResult {
  entriesPerRequest: number;
  repeats: number;
  latency: LatencySummary;
  createdPerRequest: number[];
  non2xx: number;
}

const entriesPerRequest = 100;

/**
 * C. Time of one POST /api/v1/affiliates/bulk with 100 new emails, sequentially. Welcome emails
 * are off (notify: false): the figure is the registration itself, not mail queueing.
 */
export async function bulkRegistration(ctx: BenchContext): Promise<BulkRegistrationResult> {
  const { config, gateway } = ctx;
  const product = await ctx.createProduct("bench bulk registration");
  const headers = { "x-api-key": product.liveKey };
  const stamp = Date.now().toString(36);
  const ms: number[] = [];
  const createdPerRequest: number[] = [];
  let non2xx = 0;
  for (let round = 0; round < config.bulkRepeats; round++) {
    const affiliates = Array.from({ length: entriesPerRequest }, (_, i) => ({
      email: `bulk-${stamp}-${round}-${i}@bench.invalid`,
      name: `Bulk ${round}-${i}`,
    }));
    const res = await gateway.request("/api/v1/affiliates/bulk", {
      method: "POST",
      headers,
      body: { affiliates, notify: false },
    });
    ms.push(res.ms);
    if (res.status !== 200) {
      non2xx++;
      createdPerRequest.push(0);
      continue;
    }
    createdPerRequest.push((JSON.parse(res.body) as BulkResponse).summary.created);
  }
  const latency = summarize(ms);
  printTable(
    `C. Bulk registration: POST /api/v1/affiliates/bulk, ${entriesPerRequest} new entries, ${config.bulkRepeats} times`,
    ["median ms", "max ms", "min ms", "created per request", "non-2xx"],
    [
      [
        latency.p50,
        latency.max,
        Math.min(...ms),
        `${fmt(Math.min(...createdPerRequest), 0)}-${fmt(Math.max(...createdPerRequest), 0)}`,
        non2xx,
      ],
    ],
  );
  return { entriesPerRequest, repeats: config.bulkRepeats, latency, createdPerRequest, non2xx };
}
