import Stripe from "stripe";
import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { summarize } from "../lib/latency.js";
import { compareLoads, describeNon2xx, type LoadCase, type LoadResult } from "../lib/load.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

/** Issue 20's figure: receipt to commission at 200 events/s; the target is the bench's own. */
const targets = { p99Ms: 1000 };
/** How long the events of a case may take to be applied after its load ends. */
const drainTimeoutMs = 120_000;

/** A Stripe-connected product with one affiliate whose code the invoices name. */
interface Connected {
  productId: string;
  webhookUrl: string;
  secret: string;
  code: string;
}

interface Receipts {
  load: LoadResult;
  /** Events stored (the 200s, and any answered after autocannon stopped counting). */
  stored: number;
  /** Events whose outcome is not `applied` once the drain ended. */
  notApplied: number;
  /** Stored events per second from the first receipt to the last commission recorded. */
  appliedPerSecond: number;
  /** Receipt (stored) to commission (recorded by the ledger), per event. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface StripeIngestionResult {
  saturated: Receipts;
  offered: Receipts & { offeredRate: number };
}

/** Connects a new product to Stripe through the gateway, as a merchant would. */
async function connect(ctx: BenchContext, name: string): Promise<Connected> {
  const product = await ctx.createProduct(name);
  const headers = { "x-api-key": product.liveKey };
  const stamp = Date.now().toString(36);
  const code = `stripe-${stamp}`;
  await ctx.gateway.json(
    "/api/v1/affiliates",
    { method: "POST", headers, body: { email: `stripe-${stamp}@bench.invalid`, referralCode: code, notify: false } },
    201,
  );
  const secret = `whsec_bench${stamp}`;
  const connection = (await ctx.gateway.json(
    "/api/v1/integrations/stripe",
    { method: "PUT", headers, body: { webhook_secret: secret } },
    200,
  )) as { data: { webhook_path: string } };
  return {
    productId: product.productId,
    webhookUrl: `${ctx.mesh.gatewayUrl}${connection.data.webhook_path}`,
    secret,
    code,
  };
}

/**
 * Deliveries as Stripe sends them: each a new customer's paid invoice naming the affiliate's code
 * (one payment, one commission), signed over its exact bytes with the official library's test
 * header helper. autocannon asks for the body, then the headers, of each request: the body's
 * JSON is kept for the signature.
 */
function deliveries(target: Connected, name: string, offeredRate?: number): LoadCase {
  const stamp = Date.now().toString(36);
  let sequence = 0;
  let lastPayload = "";
  return {
    name,
    url: target.webhookUrl,
    method: "POST",
    ...(offeredRate ? { offeredRate } : {}),
    body: () => {
      const n = sequence++;
      const now = Math.floor(Date.now() / 1000);
      const event = {
        id: `evt_bench${stamp}${n}`,
        object: "event",
        api_version: "2024-06-20",
        created: now,
        livemode: true,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type: "invoice.paid",
        data: {
          object: {
            id: `in_bench${stamp}${n}`,
            object: "invoice",
            amount_paid: 10_000,
            amount_due: 10_000,
            currency: "usd",
            customer: `cus_bench${stamp}${n}`,
            customer_email: `customer-${stamp}-${n}@bench.invalid`,
            livemode: true,
            metadata: { referral_code: target.code },
            paid: true,
            payment_intent: `pi_bench${stamp}${n}`,
            status: "paid",
            status_transitions: { paid_at: now },
          },
        },
      };
      lastPayload = JSON.stringify(event);
      return event;
    },
    requestHeaders: () => ({
      "stripe-signature": Stripe.webhooks.generateTestHeaderString({ payload: lastPayload, secret: target.secret }),
    }),
  };
}

/** Waits until no stored event of the product is still to be applied (or the timeout passes). */
async function drained(ctx: BenchContext, productId: string): Promise<void> {
  const deadline = Date.now() + drainTimeoutMs;
  for (;;) {
    const [row] = await ctx.sql<{ pending: number }[]>`
      select count(*)::int as pending from integrations.stripe_events
      where product_id = ${productId} and outcome = 'waiting'`;
    if ((row?.pending ?? 0) === 0 || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The figures of one case's events, read from the two services' own records once they are applied. */
async function receipts(ctx: BenchContext, target: Connected, load: LoadResult): Promise<Receipts> {
  await drained(ctx, target.productId);
  const rows = await ctx.sql<{ outcome: string; receivedAt: Date; committedAt: Date | null }[]>`
    select s.outcome, s.received_at as "receivedAt", c.created_at as "committedAt"
    from integrations.stripe_events s
    left join ledger.commissions c on c.id = s.commission_ids[1]
    where s.product_id = ${target.productId}`;
  const latencies = rows.flatMap((row) =>
    row.committedAt ? [row.committedAt.getTime() - row.receivedAt.getTime()] : [],
  );
  const first = Math.min(...rows.map((row) => row.receivedAt.getTime()));
  const last = Math.max(...rows.flatMap((row) => (row.committedAt ? [row.committedAt.getTime()] : [])));
  const latency = summarize(latencies);
  return {
    load,
    stored: rows.length,
    notApplied: rows.filter((row) => row.outcome !== "applied").length,
    appliedPerSecond: latencies.length / ((last - first) / 1000),
    p50Ms: latency.p50,
    p99Ms: latency.p99,
    maxMs: latency.max,
  };
}

/**
 * K. Stripe ingestion (issue 20): deliveries through the gateway's receiver, verified and stored
 * by integrations, applied by its worker through the ledger. Two cases, each on a product of its
 * own: saturation (as many events per second as BENCH_CONNECTIONS connections get stored), then
 * BENCH_STRIPE_RATE events/s offered (open rate), timed from receipt to the commission.
 */
export async function stripeIngestion(ctx: BenchContext): Promise<StripeIngestionResult | { skipped: string }> {
  const { config } = ctx;
  const probe = await ctx.createProduct("bench stripe probe");
  if (!(await gatewayHasRoute(ctx.gateway, "GET", "/api/v1/integrations/stripe", probe.liveKey))) {
    console.log("\nK. skipped: the gateway does not serve /api/v1/integrations/stripe");
    return { skipped: "integrations not available" };
  }
  const options = { durationS: config.durationS, rounds: 1, processes: ctx.processes(), database: ctx.database };

  const saturating = await connect(ctx, "bench stripe saturation");
  const saturationCase = deliveries(saturating, "invoice.paid deliveries, closed loop");
  const saturationLoad = (
    await compareLoads([saturationCase], { ...options, connections: config.connections, warmupS: config.warmupS })
  )[saturationCase.name] as LoadResult;
  const saturated = await receipts(ctx, saturating, saturationLoad);

  // The warm-up of the rate case runs on a product of its own, so the figures count only the run.
  const warmed = await connect(ctx, "bench stripe warm-up");
  if (config.warmupS > 0) {
    const warmup = deliveries(warmed, "warm-up", config.stripeRate);
    await compareLoads([warmup], {
      ...options,
      connections: Math.min(config.connections, config.stripeRate),
      warmupS: 0,
      durationS: config.warmupS,
    });
    await drained(ctx, warmed.productId);
  }
  const offeredTo = await connect(ctx, "bench stripe offered rate");
  const offeredCase = deliveries(offeredTo, `invoice.paid deliveries at ${config.stripeRate}/s`, config.stripeRate);
  const offeredLoad = (
    await compareLoads([offeredCase], {
      ...options,
      connections: Math.min(config.connections, config.stripeRate),
      warmupS: 0,
    })
  )[offeredCase.name] as LoadResult;
  const offered = { ...(await receipts(ctx, offeredTo, offeredLoad)), offeredRate: config.stripeRate };

  report(saturated, offered);
  return { saturated, offered };
}

function report(saturated: Receipts, offered: Receipts & { offeredRate: number }): void {
  printTable(
    "K. Stripe deliveries (signed invoice.paid, one commission each) through the gateway's receiver",
    [
      "case",
      "received/s",
      "receiver p99 ms",
      "stored",
      "not applied",
      "applied/s",
      "receipt to commission p50 ms",
      "p99 ms",
      "max ms",
      "non-2xx",
    ],
    [
      ["closed loop", saturated],
      [`${offered.offeredRate}/s offered`, offered],
    ].map(([name, r]) => {
      const figures = r as Receipts;
      return [
        name as string,
        figures.load.requestsPerSecond,
        figures.load.p99Ms,
        figures.stored,
        figures.notApplied,
        figures.appliedPerSecond,
        figures.p50Ms,
        figures.p99Ms,
        figures.maxMs,
        describeNon2xx(figures.load),
      ];
    }),
  );
  note(
    `receipt to commission p99 at ${offered.offeredRate}/s: ${fmt(offered.p99Ms)} ms (target < ${targets.p99Ms} ms): ${offered.p99Ms < targets.p99Ms ? "met" : "MISSED"}`,
  );
  note("received/s counts the 200s (stored durably); applied/s runs from the first receipt to the last commission");
  printCpuTable("K. CPU ms per delivery by process", [
    ["closed loop", saturated.load],
    [`${offered.offeredRate}/s offered`, offered.load],
  ]);
}
