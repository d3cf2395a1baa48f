import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { ratio, summarize } from "../lib/latency.js";
import { compareLoads, type DatabaseFigures, describeNon2xx, type LoadResult, meterWork } from "../lib/load.js";
import { newId } from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";
import { WebhookSink } from "../lib/webhook-sink.js";

/** One throughput case: a batch of due deliveries drained to the sink. */
export interface DrainResult {
  endpoints: number;
  deliveries: number;
  /** From the release of the batch until the last delivery was recorded as succeeded. */
  seconds: number;
  deliveriesPerSecond: number;
  /** Deliveries of the batch not recorded as succeeded when the bench stopped waiting. */
  notSucceeded: number;
  cpuMsPerRequest: Record<string, number>;
  coresBusy: number;
  database?: DatabaseFigures;
}

export interface CommitToAttempt {
  offeredRate: number;
  /** The payments the run recorded in the ledger: one commission.created each. */
  events: number;
  /** First attempts that reached the sink (a sink answering 200 gets exactly one per delivery). */
  firstAttempts: number;
  /** Events whose delivery had not reached the sink when the bench stopped waiting. */
  missing: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * Where the time went, p99 of each part: from the commit to the notifier's recording
   * transaction (the delivery row's created_at, the start of the transaction that also asked the
   * ledger and partners for the payload), and from there to the attempt reaching the sink.
   */
  toRecordedP99Ms: number;
  recordedToAttemptP99Ms: number;
  /** The tracking requests themselves, with CPU per event of every process (the notifier's work included). */
  load: LoadResult;
}

export type WebhookDeliveryResult =
  | { skipped: string }
  | {
      deliveriesPerCase: number;
      rounds: number;
      oneEndpoint: DrainResult;
      hundredEndpoints: DrainResult;
      commitToFirstAttempt: CommitToAttempt;
    };

const targets = { deliveriesPerSecond: 1000, p99Ms: 500 };
const webhooksPath = "/api/v1/webhooks";
/** How long a batch (or the last events of the latency case) may take to arrive before the bench stops waiting. */
const arrivalTimeoutMs = 300_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * J. Webhook delivery. Throughput: batches of deliveries seeded straight into the notifier's
 * table (not yet due), then made due by one UPDATE, as recording an event makes them due, and
 * drained by the notifier's job worker to an in-bench sink answering 200; one endpoint (at most
 * 10 attempts in flight, contract 9b) and 100 endpoints alternate over the rounds. Latency:
 * payments through the gateway at BENCH_WEBHOOK_RATE events/s, each one a commission.created
 * recorded by the notifier (asking the ledger and partners for the payload) and sent to the
 * sink; the time from the event's `created_at` (stamped when the ledger writes it in the
 * payment's transaction, so just before its commit) to the first attempt reaching the sink.
 */
export async function webhookDelivery(ctx: BenchContext): Promise<WebhookDeliveryResult> {
  const { config, gateway } = ctx;
  const product = await ctx.createProduct("bench webhooks");
  if (!(await gatewayHasRoute(gateway, "GET", webhooksPath, product.liveKey))) {
    const skipped = `${webhooksPath} not available`;
    console.log(`\nJ. Webhook delivery\n  skipped: ${skipped}`);
    return { skipped };
  }
  const sink = await new WebhookSink().start();
  ctx.onTeardown(() => sink.close());
  try {
    const { oneEndpoint, hundredEndpoints } = await drainCases(ctx, sink, product);
    const commitToFirstAttempt = await commitToAttemptCase(ctx, sink);
    report(config.webhookDeliveries, config.rounds, oneEndpoint, hundredEndpoints, commitToFirstAttempt);
    return {
      deliveriesPerCase: config.webhookDeliveries,
      rounds: config.rounds,
      oneEndpoint,
      hundredEndpoints,
      commitToFirstAttempt,
    };
  } finally {
    await sink.close();
  }
}

/** Registers `count` webhooks of the product on the sink, each on a path of its own. */
async function registerWebhooks(
  ctx: BenchContext,
  key: string,
  sink: WebhookSink,
  count: number,
  tag: string,
  events: string[],
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await ctx.gateway.json<{ data: { id: string } }>(
      webhooksPath,
      { method: "POST", headers: { "x-api-key": key }, body: { url: sink.url(`/${tag}/${i}`), events } },
      201,
    );
    ids.push(created.data.id);
  }
  return ids;
}

/** A body the size and shape of a real commission.created: the worker sends stored bodies as they are. */
function commissionCreatedBody(eventId: string) {
  const at = new Date().toISOString();
  return {
    id: eventId,
    type: "commission.created",
    created_at: at,
    data: {
      id: newId("com"),
      amount_cents: 2000,
      status: "pending",
      level: 1,
      parent_commission_id: null,
      hold_until: at,
      created_at: at,
      affiliate: { id: newId("aff"), email: "bench-affiliate@bench.invalid", name: "Bench Affiliate" },
      referral_code: "bench-code",
      customer_email: "bench-customer@bench.invalid",
      payment_amount_cents: 10_000,
      payout_id: null,
    },
  };
}

/**
 * Inserts `count` deliveries spread over the endpoints, not yet due (next_attempt_at null), so
 * the seeding is not measured. Answers their ids.
 */
async function seedDeliveries(
  ctx: BenchContext,
  productId: string,
  endpointIds: string[],
  count: number,
): Promise<string[]> {
  const ids: string[] = [];
  const rowsPerStatement = 2000;
  for (let start = 0; start < count; start += rowsPerStatement) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + rowsPerStatement); i++) {
      const eventId = newId("msg");
      const id = newId("dlv");
      ids.push(id);
      rows.push({
        id,
        product_id: productId,
        endpoint_id: endpointIds[i % endpointIds.length] ?? "",
        event_id: eventId,
        event_type: "commission.created",
        payload: ctx.sql.json(commissionCreatedBody(eventId)),
        status: "pending",
      });
    }
    await ctx.sql`insert into notifier.deliveries ${ctx.sql(rows)}`;
  }
  return ids;
}

/** Makes the deliveries due in one statement (its trigger wakes the workers) and times their drain. */
async function drain(ctx: BenchContext, sink: WebhookSink, ids: string[]) {
  sink.reset();
  const released = performance.now();
  await ctx.sql`update notifier.deliveries set next_attempt_at = now() where id = any(${ids}::text[])`;
  await sink.waitFor(ids.length, arrivalTimeoutMs);
  // The attempt reached the sink; the delivery is done when the worker has recorded it.
  const deadline = Date.now() + arrivalTimeoutMs;
  for (;;) {
    const [row] = await ctx.sql<{ pending: number }[]>`
      select count(*)::int as pending from notifier.deliveries where id = any(${ids}::text[]) and status <> 'succeeded'`;
    const pending = row?.pending ?? ids.length;
    if (pending === 0 || Date.now() > deadline) {
      return { seconds: (performance.now() - released) / 1000, notSucceeded: pending };
    }
    await sleep(20);
  }
}

/** Throughput: 1 endpoint and 100 endpoints, alternating over the rounds, each after a warm-up batch. */
async function drainCases(ctx: BenchContext, sink: WebhookSink, product: { productId: string; liveKey: string }) {
  const { config } = ctx;
  // Subscribed to an event type nothing in this product emits: the seeded rows are all they get.
  const events = ["payout.completed"];
  const cases = [
    { name: "1 endpoint", endpoints: await registerWebhooks(ctx, product.liveKey, sink, 1, "one", events) },
    { name: "100 endpoints", endpoints: await registerWebhooks(ctx, product.liveKey, sink, 100, "hundred", events) },
  ];
  const perRound = Math.max(1, Math.round(config.webhookDeliveries / config.rounds));
  if (config.warmupS > 0) {
    for (const { endpoints } of cases) {
      const warmup = await seedDeliveries(ctx, product.productId, endpoints, Math.min(perRound, 500));
      await drain(ctx, sink, warmup);
    }
  }
  const totals = cases.map(() => ({
    deliveries: 0,
    seconds: 0,
    notSucceeded: 0,
    wallSeconds: 0,
    cpu: {} as Record<string, number>,
    db: { active: 0, lockWaits: 0, deadlocks: 0 },
  }));
  for (let round = 0; round < config.rounds; round++) {
    for (const [index, { endpoints }] of cases.entries()) {
      const ids = await seedDeliveries(ctx, product.productId, endpoints, perRound);
      await ctx.sql`analyze notifier.deliveries`;
      const metered = await meterWork(() => drain(ctx, sink, ids), {
        processes: ctx.processes(),
        database: ctx.database,
      });
      const total = totals[index];
      if (!total) continue;
      total.deliveries += ids.length;
      total.seconds += metered.value.seconds;
      total.notSucceeded += metered.value.notSucceeded;
      total.wallSeconds += metered.wallSeconds;
      for (const [label, seconds] of Object.entries(metered.cpuSeconds)) {
        total.cpu[label] = (total.cpu[label] ?? 0) + seconds;
      }
      total.db.active += (metered.database?.active ?? 0) / config.rounds;
      total.db.lockWaits += (metered.database?.lockWaits ?? 0) / config.rounds;
      total.db.deadlocks += metered.database?.deadlocks ?? 0;
    }
  }
  const [one, hundred] = cases.map((testCase, index): DrainResult => {
    const total = totals[index] ?? totals[0];
    const cpuSeconds = Object.values(total?.cpu ?? {}).reduce((sum, seconds) => sum + seconds, 0);
    return {
      endpoints: testCase.endpoints.length,
      deliveries: total?.deliveries ?? 0,
      seconds: total?.seconds ?? 0,
      deliveriesPerSecond: ratio(total?.deliveries ?? 0, total?.seconds ?? 0),
      notSucceeded: total?.notSucceeded ?? 0,
      cpuMsPerRequest: Object.fromEntries(
        Object.entries(total?.cpu ?? {}).map(([label, s]) => [label, (s * 1000) / Math.max(1, total?.deliveries ?? 0)]),
      ),
      coresBusy: cpuSeconds / Math.max(0.001, total?.wallSeconds ?? 0),
      ...(total ? { database: total.db } : {}),
    };
  });
  return { oneEndpoint: one as DrainResult, hundredEndpoints: hundred as DrainResult };
}

interface Delivered {
  created_at: string;
}

/**
 * Latency: payments at the offered rate through the gateway, one commission.created each, one
 * webhook subscribed to it. A warm-up at the same rate comes first and is waited out, so every
 * arrival counted belongs to the measured run.
 */
async function commitToAttemptCase(ctx: BenchContext, sink: WebhookSink): Promise<CommitToAttempt> {
  const { config, gateway, mesh } = ctx;
  const product = await ctx.createProduct("bench webhook latency");
  const headers = { "x-api-key": product.liveKey };
  const stamp = Date.now().toString(36);
  const code = `hook-${stamp}`;
  await gateway.json(
    "/api/v1/affiliates",
    { method: "POST", headers, body: { email: `hook-${stamp}@bench.invalid`, referralCode: code, notify: false } },
    201,
  );
  await registerWebhooks(ctx, product.liveKey, sink, 1, "latency", ["commission.created"]);
  const latencyPath = "/latency/0";
  let sequence = 0;
  const payments = {
    name: `POST /events payment at ${config.webhookRate}/s`,
    url: `${mesh.gatewayUrl}/events`,
    method: "POST" as const,
    headers,
    offeredRate: config.webhookRate,
    // A fresh external_id per request: a repeated one would be answered as a replay, recording nothing.
    body: () => ({
      type: "payment",
      referral_code: code,
      amount_cents: 10_000,
      external_id: `hook-${stamp}-${sequence++}`,
    }),
  };
  const connections = Math.min(config.connections, config.webhookRate);
  // Counted in the ledger rather than from autocannon's answers: a request cut off when a run
  // stops still records its payment (and its webhook) without being counted as answered.
  const paymentsRecorded = async () => {
    const [row] = await ctx.sql<{ count: number }[]>`
      select count(*)::int as count from ledger.tracking_events
      where product_id = ${product.productId} and event_type = 'payment'`;
    return row?.count ?? 0;
  };
  sink.reset();
  if (config.warmupS > 0) {
    await compareLoads([payments], { connections, durationS: config.warmupS, rounds: 1, warmupS: 0 });
    await sink.waitFor(await paymentsRecorded(), arrivalTimeoutMs);
  }
  const before = await paymentsRecorded();
  sink.reset();
  const loads = await compareLoads([payments], {
    connections,
    durationS: config.durationS,
    rounds: 1,
    warmupS: 0,
    processes: ctx.processes(),
    database: ctx.database,
  });
  const load = loads[payments.name] as LoadResult;
  const events = (await paymentsRecorded()) - before;
  await sink.waitFor(events, arrivalTimeoutMs);
  const firstArrivals = new Map<string, { committed: number; arrived: number }>();
  for (const arrival of sink.received()) {
    if (arrival.path !== latencyPath || firstArrivals.has(arrival.webhookId)) continue;
    const body = JSON.parse(arrival.body) as Delivered;
    firstArrivals.set(arrival.webhookId, { committed: Date.parse(body.created_at), arrived: arrival.at });
  }
  const recorded = await ctx.sql<{ eventId: string; createdAt: Date }[]>`
    select event_id as "eventId", created_at as "createdAt" from notifier.deliveries
    where event_id = any(${[...firstArrivals.keys()]}::text[])`;
  const toRecorded: number[] = [];
  const recordedToAttempt: number[] = [];
  for (const row of recorded) {
    const times = firstArrivals.get(row.eventId);
    if (!times) continue;
    toRecorded.push(row.createdAt.getTime() - times.committed);
    recordedToAttempt.push(times.arrived - row.createdAt.getTime());
  }
  const firstAttempts = [...firstArrivals.values()].map((times) => times.arrived - times.committed);
  const latency = summarize(firstAttempts);
  return {
    offeredRate: config.webhookRate,
    events,
    firstAttempts: firstAttempts.length,
    missing: Math.max(0, events - firstAttempts.length),
    p50Ms: latency.p50,
    p99Ms: latency.p99,
    maxMs: latency.max,
    toRecordedP99Ms: summarize(toRecorded).p99,
    recordedToAttemptP99Ms: summarize(recordedToAttempt).p99,
    load,
  };
}

function report(
  deliveriesPerCase: number,
  rounds: number,
  one: DrainResult,
  hundred: DrainResult,
  latency: CommitToAttempt,
): void {
  const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
  printTable(
    `J. Webhook deliveries to a local sink: ${fmt(deliveriesPerCase)} per case (${rounds} alternating rounds)`,
    ["case", "deliveries", "deliveries/s", "not succeeded"],
    [one, hundred].map((r) => [
      `${r.endpoints} endpoint${r.endpoints === 1 ? "" : "s"}`,
      r.deliveries,
      r.deliveriesPerSecond,
      r.notSucceeded,
    ]),
  );
  note(
    `100 endpoints: ${fmt(hundred.deliveriesPerSecond)} deliveries/s (target >= ${fmt(targets.deliveriesPerSecond)}): ${verdict(hundred.deliveriesPerSecond >= targets.deliveriesPerSecond)}`,
  );
  note("1 endpoint is capped at 10 attempts in flight (contract 9b); 100 endpoints by DELIVERY_CONCURRENCY (64)");
  printTable(
    `J. Event commit to first attempt: payments at ${latency.offeredRate}/s offered, one commission.created each`,
    [
      "events",
      "events/s",
      "first attempts",
      "missing",
      "p50 ms",
      "p99 ms",
      "max ms",
      "p99 to recorded",
      "p99 recorded to attempt",
      "tracking p99 ms",
      "non-2xx",
    ],
    [
      [
        latency.events,
        latency.load.requestsPerSecond,
        latency.firstAttempts,
        latency.missing,
        latency.p50Ms,
        latency.p99Ms,
        latency.maxMs,
        latency.toRecordedP99Ms,
        latency.recordedToAttemptP99Ms,
        latency.load.p99Ms,
        describeNon2xx(latency.load),
      ],
    ],
  );
  note(
    `p99 commit to first attempt ${fmt(latency.p99Ms)} ms (target < ${targets.p99Ms} ms): ${verdict(latency.p99Ms < targets.p99Ms)}`,
  );
  printCpuTable("J. CPU ms per delivery (per event for the latency case) by process", [
    ["1 endpoint", one],
    ["100 endpoints", hundred],
    [`events at ${latency.offeredRate}/s`, latency.load],
  ]);
}
