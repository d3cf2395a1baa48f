import { invariantViolations } from "@affiliate/ledger/store/invariants";
import { webhookEventTypes } from "@affiliate/rest-shapes/schemas/webhooks";
import { type AutovacuumWork, startAutovacuumStandIn } from "../lib/autovacuum-stand-in.js";
import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { cpuBetween, cpuSnapshot } from "../lib/cpu.js";
import { HttpClient, type RequestOptions } from "../lib/http.js";
import { summarize } from "../lib/latency.js";
import { type OpenLoopAnswer, type OpenLoopKind, type OpenLoopRequest, runOpenLoop } from "../lib/open-loop.js";
import { consumerLagTotal, drained, outboxTotal, type QueueDepths, queueProbe } from "../lib/queue-depths.js";
import { residentByName } from "../lib/rss.js";
import type { SmtpSink } from "../lib/smtp-sink.js";
import { startStatementSampler, topStatements } from "../lib/statement-sampler.js";
import { type Cell, fmt, note, printTable } from "../lib/table.js";
import { WebhookSink } from "../lib/webhook-sink.js";

/** What one minute of the soak measured. Latencies and answers are placed by when they were due. */
export interface SoakMinute {
  minute: number;
  /** Requests sent (the open loop's and the payout cycle's) and answers that arrived, per second. */
  sentPerSecond: number;
  answeredPerSecond: number;
  /** Answers >= 500, requests that got no answer, and events >= 500 inside a batch's 200. */
  serverErrors: number;
  noAnswer: number;
  batchItemServerErrors: number;
  clientErrors: number;
  all: { p50Ms: number; p99Ms: number };
  byKind: Record<string, { count: number; p50Ms: number; p99Ms: number }>;
  /** Each service's RSS at the minute's end, MB. */
  rssMb: Record<string, number | undefined>;
  /** The largest queue figures sampled during the minute (every 5 s). */
  maxOutboxBacklog: number;
  maxConsumerLag: number;
  maxDeliveriesDue: number;
  maxOldestDeliveryDueSeconds: number;
  webhooksReceived: number;
  /** CPU seconds of each process group during the minute. */
  cpuSeconds: Record<string, number>;
}

export interface SoakResult {
  minutes: number;
  ratePerSecond: number;
  affiliates: number;
  perMinute: SoakMinute[];
  /** Each kind over the whole run: answers, latencies and statuses. */
  kinds: Record<string, { count: number; p50Ms: number; p99Ms: number; statuses: Record<string, number> }>;
  skipped: Record<string, number>;
  /** Seconds from the last request sent until every queue was empty (undefined: not within the wait). */
  drainSeconds: number | undefined;
  depthsAtDrain: QueueDepths;
  webhooks: DeliveryCheck;
  emails: EmailCheck;
  invariantViolations: number;
  /**
   * Where Postgres's time went: the statements that kept the most backends busy, on average, in
   * the first and last two minutes (sampled from pg_stat_activity every 100 ms).
   */
  postgresStatements: { statement: string; early: number; late: number }[];
  /** The tables with the most dead row versions at the end of the load. */
  deadTuples: { table: string; live: number; dead: number }[];
  /** What the autovacuum stand-in did, load and drain together (ran: false when the server's autovacuum is on, or BENCH_SOAK_AUTOVACUUM=off). */
  autovacuum: AutovacuumWork;
  verdicts: { target: string; figure: string; met: boolean }[];
}

export interface DeliveryCheck {
  /** Deliveries the notifier recorded for the soak's endpoint, and those not marked succeeded. */
  recorded: number;
  notSucceeded: number;
  /** Attempts the receiver got, distinct webhook-ids among them, and the ids it got more than once. */
  arrivals: number;
  distinct: number;
  duplicates: number;
  /**
   * Deliveries recorded as succeeded that the receiver never saw (lost), and ids it saw that no
   * delivery has. Deliveries not yet succeeded are `notSucceeded`, not missing.
   */
  missing: number;
  unexpected: number;
  /** The product's commissions in the ledger vs commission.created deliveries: events lost on the way. */
  commissions: number;
  commissionCreatedDeliveries: number;
  /** Deliveries by event type: what each request of the mix makes the notifier do. */
  byType: Record<string, number>;
}

export interface EmailCheck {
  recorded: number;
  /** Emails not (yet) sent; `missing` counts those recorded as sent that never arrived. */
  notSent: number;
  received: number;
  duplicates: number;
  missing: number;
}

/** Events per POST /events/batch: a merchant flushing a small buffer. */
const batchSize = 10;
const sponsorCount = 20;
const affiliateCount = 200;
/** Requests to the gateway in flight at most; more wait in the agent, their latency still counted from when they were due. */
const maxSockets = 256;
const sampleEveryMs = 5000;
/** Each look scrapes every service's metrics (their samplers query Postgres and JetStream): not too often. */
const drainPollMs = 500;
/**
 * How long the bench waits for the queues after the load. Far beyond the 10 s target on purpose:
 * the exactly-once checks need everything delivered, and a slow drain is a figure to report.
 */
const drainTimeoutMs = 600_000;
const payoutConcurrency = 4;
const targets = { rssGrowth: 0.15, p99Growth: 1.5, drainSeconds: 10 };

const kinds = {
  click: "click",
  payment: "payment (2 commissions)",
  clickBatch: `batch of ${batchSize} clicks`,
  paymentBatch: `batch of ${batchSize} payments`,
  refundKeyed: "refund, keyed (half)",
  refundUnkeyed: "refund, no key (full)",
  list: "affiliate list",
  stats12m: "stats 12m",
  stats30d: "stats 30d",
  generate: "payouts generate",
  approve: "payout approve",
  markPaid: "payout mark_paid",
} as const;

/** The mix, per 200 requests: half single clicks, a quarter single payments, the rest spread. */
const weights: Record<Exclude<keyof typeof kinds, "generate" | "approve" | "markPaid">, number> = {
  click: 100,
  payment: 50,
  clickBatch: 4,
  paymentBatch: 2,
  refundKeyed: 5,
  refundUnkeyed: 5,
  list: 12,
  stats12m: 11,
  stats30d: 11,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const verdictOf = (met: boolean) => (met ? "met" : "MISSED");

interface MinuteLog {
  offered: number;
  answered: number;
  serverErrors: number;
  noAnswer: number;
  batchItemServerErrors: number;
  clientErrors: number;
  latencies: Map<string, number[]>;
  rssMb: Record<string, number | undefined>;
  maxOutboxBacklog: number;
  maxConsumerLag: number;
  maxDeliveriesDue: number;
  maxOldestDeliveryDueSeconds: number;
  cpuSeconds: Record<string, number>;
}

const emptyMinute = (): MinuteLog => ({
  offered: 0,
  answered: 0,
  serverErrors: 0,
  noAnswer: 0,
  batchItemServerErrors: 0,
  clientErrors: 0,
  latencies: new Map(),
  rssMb: {},
  maxOutboxBacklog: 0,
  maxConsumerLag: 0,
  maxDeliveriesDue: 0,
  maxOldestDeliveryDueSeconds: 0,
  cpuSeconds: {},
});

/**
 * S. Soak: BENCH_SOAK_MINUTES of mixed traffic at BENCH_SOAK_RATE requests/s offered in an open
 * loop (each request sent when due, whatever the earlier ones do), on one product whose
 * commissions are payable at once (hold 0 days): half single clicks, a quarter single payments,
 * the rest batches of clicks and of payments, refunds with and without an Idempotency-Key,
 * affiliate lists and 12-month and 30-day stats; in the middle of every minute the product's
 * payouts are generated, approved and marked paid. One webhook endpoint, on a receiver in the
 * bench, subscribes to every event type; the notifier mails the SMTP sink main.ts started it
 * with. Per minute: throughput, latency per kind, errors, each service's RSS, the queues' depths,
 * CPU per process. At the end: how long the queues took to drain, every webhook and email
 * delivered exactly once, the ledger's invariants, and a verdict per target of issue 17.
 */
export async function soak(ctx: BenchContext, smtp: SmtpSink | undefined): Promise<SoakResult | { skipped: string }> {
  const { config, gateway, mesh, sql } = ctx;
  const product = await ctx.createProduct("bench soak");
  const headers = { "x-api-key": product.liveKey };
  if (!(await gatewayHasRoute(gateway, "POST", "/events", product.liveKey))) {
    const skipped = "POST /events not available";
    console.log(`\nS. Soak\n  skipped: ${skipped}`);
    return { skipped };
  }
  if (!smtp) throw new Error("the soak needs the SMTP sink main.ts starts before the mesh when S is selected");

  // Payable at once, so every minute's payouts find approved commissions; any amount is paid.
  await gateway.json("/api/v1/program", { method: "PATCH", headers, body: { hold_days: 0, payout_minimum_cents: 1 } });
  const stamp = Date.now().toString(36);
  const codes: string[] = [];
  // Each affiliate has a sponsor, so a payment makes two commissions; welcome emails go to the sink.
  for (let i = 0; i < sponsorCount + affiliateCount; i++) {
    const sponsor = i < sponsorCount;
    const referralCode = `soak-${sponsor ? "s" : "a"}${i}-${stamp}`;
    await gateway.json(
      "/api/v1/affiliates",
      {
        method: "POST",
        headers,
        body: {
          email: `${referralCode}@bench.invalid`,
          name: sponsor ? "Soak Sponsor" : "Soak Affiliate",
          referralCode,
          ...(sponsor ? {} : { sponsorReferralCode: `soak-s${i % sponsorCount}-${stamp}` }),
        },
      },
      201,
    );
    if (!sponsor) codes.push(referralCode);
  }
  const sink = await new WebhookSink({ keepBodies: false }).start();
  ctx.onTeardown(() => sink.close());
  const receiverPath = "/soak";
  const endpoint = await gateway.json<{ data: { id: string } }>(
    "/api/v1/webhooks",
    { method: "POST", headers, body: { url: sink.url(receiverPath), events: [...webhookEventTypes] } },
    201,
  );
  console.log(
    `\nS. Soak: ${config.soakMinutes} min at ${config.soakRate} requests/s offered (open loop); ${affiliateCount} affiliates with ${sponsorCount} sponsors; webhooks on ${webhookEventTypes.length} event types`,
  );

  const client = new HttpClient(mesh.gatewayUrl, maxSockets);
  try {
    const result = await runSoak(ctx, client, headers, codes, sink, receiverPath);
    const webhooks = await checkDeliveries(ctx, endpoint.data.id, product.productId, sink, receiverPath);
    const emails = await checkEmails(ctx, product.productId, smtp);
    const violations = await sql.begin(async (tx) => {
      await tx`set local search_path = ledger`;
      return invariantViolations(tx);
    });
    if (violations.length > 0) note(`ledger invariants BROKEN: ${JSON.stringify(violations.slice(0, 5))}`);
    const checked = { ...result, webhooks, emails, invariantViolations: violations.length };
    const full: SoakResult = { ...checked, verdicts: verdicts(checked) };
    report(full);
    return full;
  } finally {
    client.close();
    await sink.close();
  }
}

type RunFigures = Omit<SoakResult, "webhooks" | "emails" | "invariantViolations" | "verdicts">;

async function runSoak(
  ctx: BenchContext,
  client: HttpClient,
  headers: Record<string, string>,
  codes: string[],
  sink: WebhookSink,
  receiverPath: string,
): Promise<RunFigures> {
  const { config, mesh, sql } = ctx;
  const minutes = config.soakMinutes;
  const log = Array.from({ length: minutes }, emptyMinute);
  const kindTotals = new Map<string, { latencies: number[]; statuses: Record<string, number> }>();
  const probe = queueProbe(sql, () => mesh.metricsUrls);
  const stamp = Date.now().toString(36);

  let sequence = 0;
  const pick = () => codes[Math.floor(Math.random() * codes.length)] as string;
  const click = () => ({ type: "click", referral_code: pick() });
  const payment = () => ({
    type: "payment",
    referral_code: pick(),
    amount_cents: 1000 + Math.floor(Math.random() * 19_000),
    external_id: `soak-${stamp}-${sequence++}`,
  });
  const post = (path: string, body: unknown, extra: Record<string, string> = {}): OpenLoopRequest => ({
    path,
    options: { method: "POST", headers: { ...headers, ...extra }, body },
  });
  const get = (path: string): OpenLoopRequest => ({ path, options: { headers } });

  // Payments answered 201, oldest first: each is refunded at most once, by one of the two refund kinds.
  const refundable: { externalId: string; amountCents: number }[] = [];
  // Keyed refunds answered 200, for a client's retry of one (a retry while the first is still in
  // flight is answered 409 by design: that is not the replay being measured).
  const answeredKeyed: OpenLoopRequest[] = [];
  const retries = new WeakSet<OpenLoopRequest>();
  let keyedRefunds = 0;
  const mix: OpenLoopKind[] = [
    { name: kinds.click, weight: weights.click, next: () => post("/events", click()) },
    {
      name: kinds.payment,
      weight: weights.payment,
      next: () => post("/events", payment()),
      answered: (response, request) => {
        const body = request.options?.body as { external_id: string; amount_cents: number };
        if (response.status === 201) refundable.push({ externalId: body.external_id, amountCents: body.amount_cents });
      },
    },
    {
      name: kinds.clickBatch,
      weight: weights.clickBatch,
      next: () => post("/events/batch", { events: Array.from({ length: batchSize }, click) }),
    },
    {
      name: kinds.paymentBatch,
      weight: weights.paymentBatch,
      next: () => post("/events/batch", { events: Array.from({ length: batchSize }, payment) }),
    },
    {
      // A client's retry now and then: every fourth keyed refund repeats an answered one, key and
      // body, which must answer the original (Idempotent-Replayed) without refunding again.
      name: kinds.refundKeyed,
      weight: weights.refundKeyed,
      next: () => {
        keyedRefunds++;
        const retry = keyedRefunds % 4 === 0 ? answeredKeyed.shift() : undefined;
        if (retry) {
          const again = { ...retry };
          retries.add(again);
          return again;
        }
        const paid = refundable.shift();
        return (
          paid &&
          post(
            "/api/v1/refunds",
            { external_id: paid.externalId, refund_amount_cents: Math.floor(paid.amountCents / 2), reason: "soak" },
            { "idempotency-key": `soak-${paid.externalId}` },
          )
        );
      },
      answered: (response, request) => {
        if (response.status === 200 && !retries.has(request)) answeredKeyed.push(request);
      },
    },
    {
      name: kinds.refundUnkeyed,
      weight: weights.refundUnkeyed,
      next: () => {
        const paid = refundable.shift();
        return paid && post("/api/v1/refunds", { external_id: paid.externalId });
      },
    },
    { name: kinds.list, weight: weights.list, next: () => get("/api/v1/affiliates?limit=50") },
    { name: kinds.stats12m, weight: weights.stats12m, next: () => get("/api/v1/stats?period=12m") },
    { name: kinds.stats30d, weight: weights.stats30d, next: () => get("/api/v1/stats?period=30d") },
  ];

  const loadStart = performance.now();
  const loadStartWall = Date.now();
  const minuteOf = (at: number) => Math.floor((at - loadStart) / 60_000);
  const record = (kind: string, dueAt: number, answeredAt: number, status: number, body: string) => {
    const minute = log[Math.min(minutes - 1, Math.max(0, minuteOf(dueAt)))] as MinuteLog;
    const latency = answeredAt - dueAt;
    const latencies = minute.latencies.get(kind) ?? [];
    latencies.push(latency);
    minute.latencies.set(kind, latencies);
    minute.offered++;
    const answeredIn = log[minuteOf(answeredAt)];
    if (answeredIn && status !== 0) answeredIn.answered++;
    if (status === 0) minute.noAnswer++;
    else if (status >= 500) minute.serverErrors++;
    else if (status >= 400) minute.clientErrors++;
    if (status === 200 && body.startsWith('{"results"')) {
      const { results } = JSON.parse(body) as { results: { status: number }[] };
      minute.batchItemServerErrors += results.filter((result) => result.status >= 500).length;
    }
    const total = kindTotals.get(kind) ?? { latencies: [], statuses: {} };
    total.latencies.push(latency);
    total.statuses[String(status)] = (total.statuses[String(status)] ?? 0) + 1;
    kindTotals.set(kind, total);
  };
  const onAnswer = (answer: OpenLoopAnswer) =>
    record(answer.kind, answer.intendedAt, answer.answeredAt, answer.status, answer.body);

  // A closed-loop request of the payout cycle, timed from when it was sent.
  const timed = async <T>(kind: string, path: string, options: RequestOptions): Promise<T | undefined> => {
    const sentAt = performance.now();
    try {
      const response = await client.request(path, { ...options, headers });
      record(kind, sentAt, performance.now(), response.status, "");
      return response.status === 200 ? (JSON.parse(response.body) as T) : undefined;
    } catch {
      record(kind, sentAt, performance.now(), 0, "");
      return undefined;
    }
  };
  const payoutCycle = async () => {
    const generated = await timed<{ data: { id: string; status: string }[] }>(
      kinds.generate,
      "/api/v1/payouts/generate",
      {
        method: "POST",
        body: {},
      },
    );
    const queue = (generated?.data ?? []).filter((payout) => payout.status === "pending");
    const worker = async () => {
      for (let payout = queue.shift(); payout; payout = queue.shift()) {
        const path = `/api/v1/payouts/${payout.id}`;
        const approved = await timed(kinds.approve, path, { method: "PATCH", body: { action: "approve" } });
        if (approved) {
          await timed(kinds.markPaid, path, {
            method: "PATCH",
            body: { action: "mark_paid", reference: `soak-transfer-${payout.id}` },
          });
        }
      }
    };
    await Promise.all(Array.from({ length: payoutConcurrency }, worker));
  };

  const processes = ctx.processes();
  const statements = startStatementSampler(sql, minutes, loadStart);
  const autovacuum = config.soakAutovacuum
    ? await startAutovacuumStandIn(sql)
    : { stop: async (): Promise<AutovacuumWork> => ({ ran: false, vacuums: 0, analyzes: 0 }) };
  let running = true;
  const sampler = (async () => {
    while (running) {
      const depths = await probe();
      const minute = log[minuteOf(performance.now())];
      if (minute) {
        minute.maxOutboxBacklog = Math.max(minute.maxOutboxBacklog, outboxTotal(depths));
        minute.maxConsumerLag = Math.max(minute.maxConsumerLag, consumerLagTotal(depths));
        minute.maxDeliveriesDue = Math.max(minute.maxDeliveriesDue, depths.deliveriesDue);
        minute.maxOldestDeliveryDueSeconds = Math.max(
          minute.maxOldestDeliveryDueSeconds,
          depths.oldestDeliveryDueSeconds,
        );
      }
      await sleep(sampleEveryMs);
    }
  })();
  const minuteEnds = (async () => {
    let before = await cpuSnapshot(processes);
    for (let minute = 0; minute < minutes; minute++) {
      await sleep(loadStart + (minute + 1) * 60_000 - performance.now());
      const after = await cpuSnapshot(processes);
      const entry = log[minute] as MinuteLog;
      entry.cpuSeconds = cpuBetween(before, after);
      entry.rssMb = await residentByName(mesh.pids);
      before = after;
      console.log(`  minute ${minute + 1} of ${minutes} done`);
    }
  })();
  const payouts = (async () => {
    for (let minute = 0; minute < minutes; minute++) {
      await sleep(loadStart + minute * 60_000 + 30_000 - performance.now());
      // A cycle that overran into the load's end is the last: the drain measures what the load left.
      if (performance.now() >= loadStart + minutes * 60_000) break;
      await payoutCycle();
    }
  })();

  const run = await runOpenLoop({
    client,
    ratePerSecond: config.soakRate,
    durationMs: minutes * 60_000,
    kinds: mix,
    onAnswer,
  });
  await Promise.all([payouts, minuteEnds]);
  running = false;
  await sampler;
  const postgresStatements = topStatements(await statements.stop());
  const deadTuples = await sql<{ table: string; live: number; dead: number }[]>`
    select schemaname || '.' || relname as table, n_live_tup::int as live, n_dead_tup::int as dead
    from pg_stat_user_tables order by n_dead_tup desc limit 8`;

  // The end is the last request sent: its answer and everything it set off count in the drain.
  let drainSeconds: number | undefined;
  let depthsAtDrain = await probe();
  let firstEmptyAt: number | undefined;
  let nextProgressAt = performance.now() + 30_000;
  while (performance.now() - run.lastSentAt < drainTimeoutMs) {
    depthsAtDrain = await probe();
    if (performance.now() >= nextProgressAt) {
      nextProgressAt += 30_000;
      console.log(
        `  draining, ${fmt((performance.now() - run.lastSentAt) / 1000, 0)} s after the end: consumer lag ${consumerLagTotal(depthsAtDrain)}, deliveries due ${depthsAtDrain.deliveriesDue}, emails due ${depthsAtDrain.emailsDue}`,
      );
    }
    if (drained(depthsAtDrain)) {
      firstEmptyAt ??= performance.now();
      // Twice in a row: an event between two hops (published, not yet counted by its consumer) shows on the next look.
      if (performance.now() - firstEmptyAt >= drainPollMs) {
        drainSeconds = (firstEmptyAt - run.lastSentAt) / 1000;
        break;
      }
    } else {
      firstEmptyAt = undefined;
    }
    await sleep(drainPollMs);
  }

  const autovacuumWork = await autovacuum.stop();

  const webhooksPerMinute = new Array<number>(minutes).fill(0);
  for (const arrival of sink.received()) {
    const index = Math.floor((arrival.at - loadStartWall) / 60_000);
    if (arrival.path === receiverPath && index >= 0 && index < minutes)
      webhooksPerMinute[index] = (webhooksPerMinute[index] ?? 0) + 1;
  }

  const perMinute = log.map((entry, index): SoakMinute => {
    const all = summarize([...entry.latencies.values()].flat());
    return {
      minute: index + 1,
      sentPerSecond: entry.offered / 60,
      answeredPerSecond: entry.answered / 60,
      serverErrors: entry.serverErrors,
      noAnswer: entry.noAnswer,
      batchItemServerErrors: entry.batchItemServerErrors,
      clientErrors: entry.clientErrors,
      all: { p50Ms: all.p50, p99Ms: all.p99 },
      byKind: Object.fromEntries(
        [...entry.latencies].map(([kind, latencies]) => {
          const summary = summarize(latencies);
          return [kind, { count: summary.count, p50Ms: summary.p50, p99Ms: summary.p99 }];
        }),
      ),
      rssMb: entry.rssMb,
      maxOutboxBacklog: entry.maxOutboxBacklog,
      maxConsumerLag: entry.maxConsumerLag,
      maxDeliveriesDue: entry.maxDeliveriesDue,
      maxOldestDeliveryDueSeconds: entry.maxOldestDeliveryDueSeconds,
      webhooksReceived: webhooksPerMinute[index] ?? 0,
      cpuSeconds: entry.cpuSeconds,
    };
  });
  return {
    minutes,
    ratePerSecond: config.soakRate,
    affiliates: codes.length,
    perMinute,
    kinds: Object.fromEntries(
      [...kindTotals].map(([kind, total]) => {
        const summary = summarize(total.latencies);
        return [kind, { count: summary.count, p50Ms: summary.p50, p99Ms: summary.p99, statuses: total.statuses }];
      }),
    ),
    skipped: run.skipped,
    drainSeconds,
    depthsAtDrain,
    postgresStatements,
    deadTuples: [...deadTuples],
    autovacuum: autovacuumWork,
  };
}

/** Every delivery the notifier recorded for the endpoint arrived exactly once, by webhook-id. */
async function checkDeliveries(
  ctx: BenchContext,
  endpointId: string,
  productId: string,
  sink: WebhookSink,
  receiverPath: string,
): Promise<DeliveryCheck> {
  const rows = await ctx.sql<{ eventId: string; status: string; eventType: string }[]>`
    select event_id as "eventId", status, event_type as "eventType" from notifier.deliveries
    where endpoint_id = ${endpointId}`;
  const seen = new Map<string, number>();
  for (const arrival of sink.received()) {
    if (arrival.path === receiverPath) seen.set(arrival.webhookId, (seen.get(arrival.webhookId) ?? 0) + 1);
  }
  const recordedIds = new Set(rows.map((row) => row.eventId));
  const [commissions] = await ctx.sql<{ count: number }[]>`
    select count(*)::int as count from ledger.commissions where product_id = ${productId}`;
  return {
    recorded: rows.length,
    notSucceeded: rows.filter((row) => row.status !== "succeeded").length,
    arrivals: [...seen.values()].reduce((sum, n) => sum + n, 0),
    distinct: seen.size,
    duplicates: [...seen.values()].reduce((sum, n) => sum + n - 1, 0),
    missing: rows.filter((row) => row.status === "succeeded" && !seen.has(row.eventId)).length,
    unexpected: [...seen.keys()].filter((id) => !recordedIds.has(id)).length,
    commissions: commissions?.count ?? 0,
    commissionCreatedDeliveries: rows.filter((row) => row.eventType === "commission.created").length,
    byType: rows.reduce<Record<string, number>>((counts, row) => {
      counts[row.eventType] = (counts[row.eventType] ?? 0) + 1;
      return counts;
    }, {}),
  };
}

/** Every email the notifier recorded for the product reached the SMTP sink exactly once, by Message-ID. */
async function checkEmails(ctx: BenchContext, productId: string, smtp: SmtpSink): Promise<EmailCheck> {
  const rows = await ctx.sql<{ id: string; status: string }[]>`
    select id, status from notifier.emails where product_id = ${productId}`;
  const ids = new Set(rows.map((row) => row.id));
  const received = new Map<string, number>();
  for (const messageId of smtp.messageIds()) {
    // `<email id@affiliate-notifier>`; other runs' mail (none here) would not match an id.
    const id = messageId.split("@")[0] ?? "";
    if (ids.has(id)) received.set(id, (received.get(id) ?? 0) + 1);
  }
  return {
    recorded: rows.length,
    notSent: rows.filter((row) => row.status !== "sent").length,
    received: [...received.values()].reduce((sum, n) => sum + n, 0),
    duplicates: [...received.values()].reduce((sum, n) => sum + n - 1, 0),
    missing: rows.filter((row) => row.status === "sent" && !received.has(row.id)).length,
  };
}

/** Minute 2 is the baseline (minute 1 warms up); a run shorter than 3 minutes falls back to minute 1. */
const baselineIndex = (minutes: number) => Math.max(0, Math.min(1, minutes - 2));

function verdicts(result: Omit<SoakResult, "verdicts">): SoakResult["verdicts"] {
  const minutes = result.perMinute;
  const baseline = minutes[baselineIndex(minutes.length)] as SoakMinute;
  const last = minutes[minutes.length - 1] as SoakMinute;
  const failures = minutes.reduce((sum, m) => sum + m.serverErrors + m.noAnswer + m.batchItemServerErrors, 0);
  const rssGrowth = Object.keys(last.rssMb).map((service) => {
    const before = baseline.rssMb[service];
    const after = last.rssMb[service];
    return { service, growth: before && after ? after / before - 1 : Number.NaN };
  });
  const p99Growth = Object.keys(last.byKind).map((kind) => {
    const before = baseline.byKind[kind]?.p99Ms;
    const after = last.byKind[kind]?.p99Ms;
    return { kind, growth: before && after ? after / before : Number.NaN };
  });
  const { webhooks, emails } = result;
  const label = (m: SoakMinute) => `minute ${m.minute}`;
  return [
    {
      target: "0 answers >= 500",
      figure: `${failures} (answers >= 500, no answer, batch events >= 500)`,
      met: failures === 0,
    },
    {
      target: `RSS of each service at ${label(last)} within +${targets.rssGrowth * 100}% of ${label(baseline)}`,
      figure: rssGrowth.map((r) => `${r.service} ${fmt(r.growth * 100)}%`).join(", "),
      met: rssGrowth.every((r) => r.growth <= targets.rssGrowth),
    },
    {
      target: `p99 of each kind at ${label(last)} within ${targets.p99Growth}x of ${label(baseline)}`,
      figure: p99Growth
        .map((r) => `${r.kind} ${Number.isFinite(r.growth) ? `${fmt(r.growth, 2)}x` : "n/a"}`)
        .join(", "),
      met: p99Growth.every((r) => r.growth <= targets.p99Growth),
    },
    {
      target: `every queue drained within ${targets.drainSeconds} s of the end`,
      figure:
        result.drainSeconds === undefined ? `not within ${drainTimeoutMs / 1000} s` : `${fmt(result.drainSeconds)} s`,
      met: result.drainSeconds !== undefined && result.drainSeconds <= targets.drainSeconds,
    },
    {
      target: "every webhook delivered exactly once by webhook-id",
      figure: `${webhooks.recorded} recorded, ${webhooks.distinct} received, ${webhooks.duplicates} duplicates, ${webhooks.missing} missing, ${webhooks.unexpected} unexpected, ${webhooks.notSucceeded} not succeeded; ${webhooks.commissionCreatedDeliveries} commission.created for ${webhooks.commissions} commissions (by type: ${Object.entries(
        webhooks.byType,
      )
        .map(([type, count]) => `${type} ${count}`)
        .join(
          ", ",
        )}); emails ${emails.recorded} recorded, ${emails.received} received, ${emails.duplicates} duplicates, ${emails.missing} missing`,
      met:
        webhooks.duplicates === 0 &&
        webhooks.missing === 0 &&
        webhooks.unexpected === 0 &&
        webhooks.notSucceeded === 0 &&
        webhooks.commissionCreatedDeliveries === webhooks.commissions &&
        emails.duplicates === 0 &&
        emails.missing === 0 &&
        emails.notSent === 0,
    },
    {
      target: "the ledger's invariants hold",
      figure: `${result.invariantViolations} violations`,
      met: result.invariantViolations === 0,
    },
  ];
}

function report(result: SoakResult): void {
  const minutes = result.perMinute;
  const columns = minutes.map((m) => `m${m.minute}`);
  printTable(
    `S. Soak per minute: ${result.ratePerSecond} requests/s offered`,
    [
      "minute",
      "sent/s",
      "answered/s",
      ">= 500",
      "no answer",
      "batch events >= 500",
      "4xx",
      "p50 ms",
      "p99 ms",
      "outbox backlog (max)",
      "consumer lag (max)",
      "deliveries due (max)",
      "oldest due delivery s (max)",
      "webhooks received/s",
    ],
    minutes.map((m) => [
      m.minute,
      m.sentPerSecond,
      m.answeredPerSecond,
      m.serverErrors,
      m.noAnswer,
      m.batchItemServerErrors,
      m.clientErrors,
      m.all.p50Ms,
      m.all.p99Ms,
      m.maxOutboxBacklog,
      m.maxConsumerLag,
      m.maxDeliveriesDue,
      m.maxOldestDeliveryDueSeconds,
      m.webhooksReceived / 60,
    ]),
  );
  const kindNames = Object.keys(result.kinds);
  printTable(
    "S. p50 / p99 ms per kind and minute (placed by when each request was due)",
    ["kind", ...columns],
    kindNames.map((kind) => [
      kind,
      ...minutes.map((m): Cell => {
        const figures = m.byKind[kind];
        return figures ? `${fmt(figures.p50Ms, 0)} / ${fmt(figures.p99Ms, 0)}` : "";
      }),
    ]),
  );
  printTable(
    "S. Each kind over the run",
    ["kind", "requests", "p50 ms", "p99 ms", "statuses"],
    kindNames.map((kind) => {
      const k = result.kinds[kind] as SoakResult["kinds"][string];
      const statuses = Object.entries(k.statuses)
        .map(([status, count]) => `${status === "0" ? "no answer" : status}: ${count}`)
        .join(", ");
      return [kind, k.count, k.p50Ms, k.p99Ms, statuses];
    }),
  );
  const skipped = Object.entries(result.skipped);
  if (skipped.length > 0) {
    note(`slots skipped (nothing to refund yet): ${skipped.map(([kind, n]) => `${kind} ${n}`).join(", ")}`);
  }
  const services = Object.keys(minutes[0]?.rssMb ?? {});
  printTable(
    "S. RSS MB per service at each minute's end",
    ["service", ...columns],
    services.map((service) => [service, ...minutes.map((m) => m.rssMb[service])]),
  );
  const groups = [...new Set(minutes.flatMap((m) => Object.keys(m.cpuSeconds)))];
  const answered = minutes.reduce((sum, m) => sum + m.answeredPerSecond * 60, 0);
  const cpuTotal = (group: string) => minutes.reduce((sum, m) => sum + (m.cpuSeconds[group] ?? 0), 0);
  printTable(
    "S. Cores busy per process and minute (CPU s / 60 s), and CPU ms per request over the run",
    ["process", ...columns, "CPU ms per request"],
    [
      ...groups.map((group) => [
        group,
        ...minutes.map((m) => (m.cpuSeconds[group] ?? 0) / 60),
        (cpuTotal(group) * 1000) / Math.max(1, answered),
      ]),
      [
        "all",
        ...minutes.map((m) => Object.values(m.cpuSeconds).reduce((sum, s) => sum + s, 0) / 60),
        (groups.reduce((sum, group) => sum + cpuTotal(group), 0) * 1000) / Math.max(1, answered),
      ],
    ],
    2,
  );
  if (minutes.length < 3) {
    note("fewer than 3 minutes: the drift targets compare minute 1 (the warm-up) with the last, not minute 2");
  }
  const d = result.depthsAtDrain;
  note(
    `drain: ${result.drainSeconds === undefined ? `NOT drained within ${drainTimeoutMs / 1000} s` : `${fmt(result.drainSeconds)} s`} after the last request sent; at the last look outbox ${JSON.stringify(d.outbox)}, consumer lag ${JSON.stringify(d.consumerLag)}, deliveries due ${d.deliveriesDue} (oldest ${fmt(d.oldestDeliveryDueSeconds)} s), emails due ${d.emailsDue}`,
  );
  printTable(
    "S. Postgres's busy backends by statement, on average (sampled every 100 ms), first and last two minutes",
    ["statement", "early", "late"],
    result.postgresStatements.map((s) => [s.statement, s.early, s.late]),
    2,
  );
  printTable(
    `S. Dead row versions at the end of the load (${
      result.autovacuum.ran
        ? `autovacuum stood in for: ${result.autovacuum.vacuums} vacuums, ${result.autovacuum.analyzes} analyzes`
        : "the server's own autovacuum, or none with BENCH_SOAK_AUTOVACUUM=off"
    })`,
    ["table", "live", "dead"],
    result.deadTuples.map((t) => [t.table, t.live, t.dead]),
    0,
  );
  printTable(
    "S. Verdicts (issue 17's soak targets)",
    ["target", "figure", "verdict"],
    result.verdicts.map((v) => [v.target, v.figure, verdictOf(v.met)]),
  );
}
