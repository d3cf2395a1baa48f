import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { HttpClient } from "../lib/http.js";
import { type LatencySummary, ratio, summarize } from "../lib/latency.js";
import { fmt, note, printTable } from "../lib/table.js";

export type ErasureResult =
  | { skipped: string }
  | {
      customerEvents: number;
      otherEvents: number;
      status: number;
      erasedEvents: number | undefined;
      /** DELETE /api/v1/customers, request to answer. */
      eraseMs: number;
      trackingWithout: LatencySummary;
      trackingDuring: LatencySummary;
      p99Ratio: number;
    };

const targets = { eraseMs: 2000, p99Ratio: 2 };
/** Concurrent clients clicking while the product is (or is not) being erased. */
const trackingClients = 8;
/** The baseline window, and the least the "during" window lasts. */
const windowMs = 3000;

/**
 * I. Erasing a big customer (spec 4.11, issue 11): BENCH_ERASURE_EVENTS payments of one email
 * (and as many of other customers) seeded into one product; DELETE /api/v1/customers timed to
 * its answer, while 8 clients track clicks into the same product. The clicks' p99 during the
 * erasure is compared with their p99 in an equal window without it: the erasure works in short
 * transactions, so the product's hot rows should never wait long behind it.
 */
export async function erasure(ctx: BenchContext): Promise<ErasureResult> {
  const { config, gateway, sql, mesh } = ctx;
  const product = await ctx.createProduct("bench erasure");
  const headers = { "x-api-key": product.liveKey };
  if (!(await gatewayHasRoute(gateway, "DELETE", "/api/v1/customers", product.liveKey))) {
    const skipped = "DELETE /api/v1/customers not available";
    console.log(`\nI. Erasure\n  skipped: ${skipped}`);
    return { skipped };
  }
  const stamp = Date.now().toString(36);
  const code = `erase-${stamp}`;
  const registered = await gateway.json<{ partnership: { id: string } }>(
    "/api/v1/affiliates",
    { method: "POST", headers, body: { email: `aff-${stamp}@bench.invalid`, referralCode: code, notify: false } },
    201,
  );
  const email = `big-customer-${stamp}@bench.invalid`;
  const events = config.erasureEvents;
  // The customer's payments, and as many of other customers (what the erasure must not touch).
  await sql`
    insert into ledger.tracking_events
      (id, product_id, event_type, partnership_id, visitor_id, customer_email, provider_customer_id,
       amount_cents, external_id, ip, user_agent, occurred_at)
    select 'evt_bench_erase_' || ${stamp} || '_' || n, ${product.productId}, 'payment', ${registered.partnership.id},
           'vis_' || n, case when n % 2 = 0 then ${email} else 'other-' || n || '@bench.invalid' end, 'cus_' || n,
           1000 + n, 'ch_' || ${stamp} || '_' || n, '198.51.100.' || (n % 250), 'bench agent',
           now() - make_interval(secs => n)
    from generate_series(1, ${events * 2}) as n`;
  await sql.unsafe("vacuum (analyze) ledger.tracking_events");

  const track = (stop: () => boolean) => clickUntil(mesh.gatewayUrl, headers, code, stop);
  // Unrecorded warm-up, as every load case of the bench has: JIT, pools and caches warm.
  const warmupEnds = performance.now() + config.warmupS * 1000;
  await track(() => performance.now() >= warmupEnds);
  const baselineEnds = performance.now() + windowMs;
  const trackingWithout = summarize(await track(() => performance.now() >= baselineEnds));

  let erased: { status: number; body: string; ms: number } | undefined;
  let minimumEnds = Number.POSITIVE_INFINITY;
  const during = track(() => erased !== undefined && performance.now() >= minimumEnds);
  // Let the clicks reach a steady pace before the erasure starts.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const answer = await gateway.request("/api/v1/customers", { method: "DELETE", headers, body: { email } });
  minimumEnds = performance.now() + Math.max(0, windowMs - answer.ms);
  erased = answer;
  const trackingDuring = summarize(await during);

  const erasedEvents =
    answer.status === 200
      ? (JSON.parse(answer.body) as { data: { anonymized: { tracking_events: number } } }).data.anonymized
          .tracking_events
      : undefined;
  const p99Ratio = ratio(trackingDuring.p99, trackingWithout.p99);
  printTable(
    `I. Erasure of one customer with ${fmt(events)} events (and ${fmt(events)} of others), ${trackingClients} clients clicking meanwhile`,
    ["case", "status", "ms", "tracking p50 ms", "tracking p99 ms", "clicks"],
    [
      ["clicks alone", "", "", trackingWithout.p50, trackingWithout.p99, trackingWithout.count],
      [
        "DELETE /api/v1/customers, clicks meanwhile",
        answer.status,
        answer.ms,
        trackingDuring.p50,
        trackingDuring.p99,
        trackingDuring.count,
      ],
    ],
  );
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  note(`events erased: ${fmt(erasedEvents)} of ${fmt(events)}`);
  note(`erasure ${fmt(answer.ms)} ms (target < ${targets.eraseMs} ms): ${verdict(answer.ms < targets.eraseMs)}`);
  note(
    `tracking p99 during / without ${fmt(p99Ratio, 2)} (target <= ${targets.p99Ratio}): ${verdict(p99Ratio <= targets.p99Ratio)}`,
  );
  return {
    customerEvents: events,
    otherEvents: events,
    status: answer.status,
    erasedEvents,
    eraseMs: answer.ms,
    trackingWithout,
    trackingDuring,
    p99Ratio,
  };
}

/** Clicks from `trackingClients` clients, each on its own kept-alive socket, until `stop`; their latencies. */
async function clickUntil(
  baseUrl: string,
  headers: Record<string, string>,
  code: string,
  stop: () => boolean,
): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: trackingClients }, async () => {
      const client = new HttpClient(baseUrl);
      try {
        while (!stop()) {
          const res = await client.request("/events", {
            method: "POST",
            headers,
            body: { type: "click", referral_code: code },
          });
          if (res.status !== 201) throw new Error(`POST /events answered ${res.status}: ${res.body}`);
          latencies.push(res.ms);
        }
      } finally {
        client.close();
      }
    }),
  );
  return latencies;
}
