import { invariantViolations } from "@affiliate/ledger/store/invariants";
import { compareWithInsertReference } from "../lib/child-server.js";
import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { ratio } from "../lib/latency.js";
import { describeNon2xx, type LoadResult } from "../lib/load.js";
import { fmt, note, pct, printCpuTable, printTable } from "../lib/table.js";

export type TrackingThroughputResult =
  | { skipped: string }
  | {
      connections: number;
      durationS: number;
      rounds: number;
      insertRoute: LoadResult;
      clicks: LoadResult;
      payments: LoadResult;
      clickBatches: LoadResult;
      paymentBatches: LoadResult;
      clicksOverInsert: number;
      paymentsOverInsert: number;
      /** Events per second of batches of `batchSize` over the INSERT route's requests per second. */
      clickBatchesOverInsert: number;
      paymentBatchesOverInsert: number;
      batchSize: number;
      /** Measured in the ledger after the run: every payment should have made two. */
      commissionsPerPayment: number;
    };

const targets = { clicks: 0.5, payments: 0.3, p99Ms: 100, clickBatches: 3, paymentBatches: 1 };
/** Events per POST /events/batch request in the batch cases. */
const batchSize = 100;
const scratchTable = "bench_scratch_events";
const names = {
  insert: "fastify route -> one INSERT, pool 10 (reference)",
  clicks: "POST /events click",
  payments: "POST /events payment (2 commissions)",
  clickBatches: `POST /events/batch, ${batchSize} clicks`,
  paymentBatches: `POST /events/batch, ${batchSize} payments`,
};

interface TrackedEvent {
  data: { commissions: unknown[] };
}

/**
 * E. Tracking throughput through the whole mesh (gateway -> ledger -> partners directory ->
 * Postgres + outbox) against the floor of one INSERT per request in one process. Payments are
 * attributed to an affiliate who has a sponsor, so each creates a level-1 and a level-2
 * commission: the most expensive tracking call there is. Single events are coalesced by the
 * gateway as in production; the batch cases send POST /events/batch of `batchSize` events and
 * are compared in events per second.
 */
export async function trackingThroughput(ctx: BenchContext): Promise<TrackingThroughputResult> {
  const { config, gateway, mesh, sql } = ctx;
  const product = await ctx.createProduct("bench tracking");
  const headers = { "x-api-key": product.liveKey };
  if (!(await gatewayHasRoute(gateway, "POST", "/events", product.liveKey))) {
    const skipped = "POST /events not available";
    console.log(`\nE. Tracking throughput\n  skipped: ${skipped}`);
    return { skipped };
  }

  const stamp = Date.now().toString(36);
  const register = (body: Record<string, unknown>) =>
    gateway.json("/api/v1/affiliates", { method: "POST", headers, body: { ...body, notify: false } }, 201);
  await register({ email: `sponsor-${stamp}@bench.invalid`, name: "Sponsor", referralCode: `sponsor-${stamp}` });
  const code = `affiliate-${stamp}`;
  await register({
    email: `affiliate-${stamp}@bench.invalid`,
    name: "Affiliate",
    referralCode: code,
    sponsorReferralCode: `sponsor-${stamp}`,
  });

  let sequence = 0;
  const click = () => ({ type: "click", referral_code: code });
  // A fresh external_id per request: a repeated one would be answered as a replay, creating nothing.
  const payment = () => ({
    type: "payment",
    referral_code: code,
    amount_cents: 10_000,
    external_id: `pay-${stamp}-${sequence++}`,
  });
  const first = await gateway.json<TrackedEvent>("/events", { method: "POST", headers, body: payment() }, 201);
  console.log(`  a payment answers with ${first.data.commissions.length} commissions`);

  const events = `${mesh.gatewayUrl}/events`;
  const batchOf = (event: () => Record<string, unknown>) => () => ({
    events: Array.from({ length: batchSize }, event),
  });
  const loads = await compareWithInsertReference(ctx, scratchTable, (referenceUrl) => [
    { name: names.insert, url: referenceUrl, method: "POST", body: payment },
    { name: names.clicks, url: events, method: "POST", headers, body: click },
    { name: names.payments, url: events, method: "POST", headers, body: payment },
    { name: names.clickBatches, url: `${events}/batch`, method: "POST", headers, body: batchOf(click) },
    { name: names.paymentBatches, url: `${events}/batch`, method: "POST", headers, body: batchOf(payment) },
  ]);
  const insertRoute = loads[names.insert] as LoadResult;
  const clicks = loads[names.clicks] as LoadResult;
  const payments = loads[names.payments] as LoadResult;
  const clickBatches = loads[names.clickBatches] as LoadResult;
  const paymentBatches = loads[names.paymentBatches] as LoadResult;
  const eventsOverInsert = (r: LoadResult) => ratio(r.requestsPerSecond * batchSize, insertRoute.requestsPerSecond);

  const [counts] = await sql<{ payments: string; commissions: string }[]>`
    select (select count(*) from ledger.tracking_events where product_id = ${product.productId}
              and event_type = 'payment') as payments,
           (select count(*) from ledger.commissions where product_id = ${product.productId}) as commissions`;
  const commissionsPerPayment = ratio(Number(counts?.commissions ?? 0), Number(counts?.payments ?? 0));

  printTable(
    `E. Tracking throughput: ${config.connections} connections, ${config.durationS} s each (${config.rounds} alternating rounds)`,
    ["case", "req/s", "events/s", "p50 ms", "p99 ms", "non-2xx", "errors", "events/s vs INSERT route"],
    [
      [names.insert, ...loadCells(insertRoute, 1), "100%"],
      [names.clicks, ...loadCells(clicks, 1), pct(ratio(clicks.requestsPerSecond, insertRoute.requestsPerSecond))],
      [
        names.payments,
        ...loadCells(payments, 1),
        pct(ratio(payments.requestsPerSecond, insertRoute.requestsPerSecond)),
      ],
      [names.clickBatches, ...loadCells(clickBatches, batchSize), pct(eventsOverInsert(clickBatches))],
      [names.paymentBatches, ...loadCells(paymentBatches, batchSize), pct(eventsOverInsert(paymentBatches))],
    ],
  );
  const clicksOverInsert = ratio(clicks.requestsPerSecond, insertRoute.requestsPerSecond);
  const paymentsOverInsert = ratio(payments.requestsPerSecond, insertRoute.requestsPerSecond);
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  note(
    `clicks ${pct(clicksOverInsert)} of the INSERT route (target >= ${pct(targets.clicks)}): ${verdict(clicksOverInsert >= targets.clicks)}`,
  );
  note(
    `payments ${pct(paymentsOverInsert)} of the INSERT route (target >= ${pct(targets.payments)}): ${verdict(paymentsOverInsert >= targets.payments)}`,
  );
  note(
    `p99 clicks ${fmt(clicks.p99Ms)} ms, payments ${fmt(payments.p99Ms)} ms (target < ${targets.p99Ms} ms): ${verdict(Math.max(clicks.p99Ms, payments.p99Ms) < targets.p99Ms)}`,
  );
  const clickBatchesOverInsert = eventsOverInsert(clickBatches);
  const paymentBatchesOverInsert = eventsOverInsert(paymentBatches);
  note(
    `batches of ${batchSize} clicks ${fmt(clickBatchesOverInsert, 2)}x the INSERT route in events/s (target >= ${targets.clickBatches}x): ${verdict(clickBatchesOverInsert >= targets.clickBatches)}`,
  );
  note(
    `batches of ${batchSize} payments ${fmt(paymentBatchesOverInsert, 2)}x the INSERT route in events/s (target >= ${targets.paymentBatches}x): ${verdict(paymentBatchesOverInsert >= targets.paymentBatches)}`,
  );
  note(`commissions per payment in the ledger afterwards: ${fmt(commissionsPerPayment, 2)}`);
  const violations = await sql.begin(async (tx) => {
    await tx`set local search_path = ledger`;
    return invariantViolations(tx);
  });
  note(
    `ledger invariants after the run (rollups equal to the events included): ${violations.length === 0 ? "hold" : `BROKEN ${JSON.stringify(violations.slice(0, 5))}`}`,
  );
  printCpuTable(`E. CPU ms per request by process (a batch request carries ${batchSize} events)`, [
    [names.insert, insertRoute],
    [names.clicks, clicks],
    [names.payments, payments],
    [names.clickBatches, clickBatches],
    [names.paymentBatches, paymentBatches],
  ]);
  return {
    connections: config.connections,
    durationS: config.durationS,
    rounds: config.rounds,
    insertRoute,
    clicks,
    payments,
    clickBatches,
    paymentBatches,
    clicksOverInsert,
    paymentsOverInsert,
    clickBatchesOverInsert,
    paymentBatchesOverInsert,
    batchSize,
    commissionsPerPayment,
  };
}

function loadCells(r: LoadResult, eventsPerRequest: number) {
  return [
    r.requestsPerSecond,
    r.requestsPerSecond * eventsPerRequest,
    r.p50Ms,
    r.p99Ms,
    describeNon2xx(r),
    r.errors + r.timeouts,
  ];
}
