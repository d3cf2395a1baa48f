import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { type DatabaseFigures, meterWork } from "../lib/load.js";
import { type PaymentTotals, rollupMismatches, seedApprovedPayments, seedPartnerships } from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

/** What the payouts and ledger schemas hold for the product after the generation. */
interface PayoutCheck {
  payouts: number;
  drafts: number;
  payoutCents: number;
  payoutCommissionCount: number;
  /** Partnerships with more than one payout (0: one each). */
  partnershipsWithSeveral: number;
  commissions: number;
  commissionCents: number;
  unlinked: number;
  /** Commissions whose payout_id names a pending payout of their own partnership that links them back. */
  linkedConsistently: number;
  /** Open payouts whose amount is not the sum of their links and adjustments. */
  payoutsOffTheirLinks: number;
}

export type PayoutGenerationResult =
  | { skipped: string }
  | {
      partnerships: number;
      commissions: number;
      seedSeconds: number;
      status: number;
      /** Until the HTTP answer. */
      answeredS: number;
      /** Until every payout was in place (the same as answeredS when the answer was 200). */
      completedS: number | undefined;
      payoutsAnswered: number | undefined;
      check: PayoutCheck;
      verified: boolean;
      cpuSeconds: Record<string, number>;
      coresBusy: number;
      database?: DatabaseFigures;
    };

const targetS = 30;
const generatePath = "/api/v1/payouts/generate";
/** Lowest commission seeded is 20% of $10.00: a 1-cent minimum lets every partnership qualify. */
const payoutMinimumCents = 1;
/** How long the generation may go on after a non-200 answer before the bench stops waiting. */
const completionTimeoutMs = 600_000;
/** Nothing changing in the payouts for this long after a non-200 answer means it stopped. */
const stallMs = 15_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * H. One POST /api/v1/payouts/generate over BENCH_PAYOUT_PARTNERSHIPS active partnerships
 * holding BENCH_PAYOUT_COMMISSIONS approved, unlinked level-1 commissions, seeded in bulk with
 * their payments and rollups. Timed to the answer (and, when the answer is not 200, until the
 * payouts service has finished anyway), with CPU by process meanwhile; then the ledger and the
 * payouts schema are asked whether every commission went into its partnership's one payout.
 */
export async function payoutGeneration(ctx: BenchContext): Promise<PayoutGenerationResult> {
  const { config, gateway, sql } = ctx;
  const product = await ctx.createProduct("bench payout generation");
  const headers = { "x-api-key": product.liveKey };
  // Asked of the empty product: a generation that has nothing to pay creates nothing.
  if (!(await gatewayHasRoute(gateway, "POST", generatePath, product.liveKey))) {
    const skipped = `POST ${generatePath} not available`;
    console.log(`\nH. Payout generation\n  skipped: ${skipped}`);
    return { skipped };
  }
  await gateway.json("/api/v1/program", {
    method: "PATCH",
    headers,
    body: { payout_minimum_cents: payoutMinimumCents },
  });

  const stamp = Date.now().toString(36);
  const seedStarted = performance.now();
  const partnerships = await seedPartnerships(sql, product.productId, config.payoutPartnerships, `po-${stamp}`);
  const seeded: PaymentTotals = await seedApprovedPayments(
    sql,
    product.productId,
    partnerships.map((partnership) => ({ partnership })),
    config.payoutCommissions,
    `po-${stamp}`,
  );
  for (const table of ["tracking_events", "commissions", "daily_rollups", "partnership_rollups"]) {
    await sql.unsafe(`vacuum (analyze) ledger.${table}`);
  }
  await sql`checkpoint`;
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const mismatches = await rollupMismatches(sql, product.productId);
  console.log(
    `  seeded ${fmt(partnerships.length)} partnerships holding ${fmt(seeded.payments)} approved commissions in ${seedSeconds.toFixed(1)} s; rollup rows disagreeing: daily ${mismatches.daily}, partnerships ${mismatches.partnerships}`,
  );
  const expectedPayouts = Math.min(partnerships.length, seeded.payments);

  const metered = await meterWork(
    async () => {
      const started = performance.now();
      const res = await gateway.request(generatePath, { method: "POST", headers, body: {} });
      const answeredS = (performance.now() - started) / 1000;
      if (res.status === 200) {
        const payoutsAnswered = (JSON.parse(res.body) as { data: unknown[] }).data.length;
        return { status: res.status, body: res.body, answeredS, completedS: answeredS, payoutsAnswered };
      }
      // The service may go on after the gateway gave up on it: time that too.
      const done = await waitForCompletion(ctx, product.productId, expectedPayouts);
      return {
        status: res.status,
        body: res.body,
        answeredS,
        completedS: done ? (performance.now() - started) / 1000 : undefined,
        payoutsAnswered: undefined,
      };
    },
    { processes: ctx.processes(), database: ctx.database },
  );
  const run = metered.value;
  const check = await checkPayouts(ctx, product.productId);
  const verified =
    check.payouts === expectedPayouts &&
    check.drafts === 0 &&
    check.partnershipsWithSeveral === 0 &&
    check.payoutCents === check.commissionCents &&
    check.payoutCommissionCount === check.commissions &&
    check.unlinked === 0 &&
    check.linkedConsistently === check.commissions &&
    check.payoutsOffTheirLinks === 0;

  printTable(
    `H. Payout generation: one POST ${generatePath}, ${fmt(partnerships.length)} partnerships, ${fmt(seeded.payments)} approved commissions`,
    ["HTTP status", "answered after s", "all payouts in place after s", "payouts in the answer", "payouts expected"],
    [[run.status, run.answeredS, run.completedS, run.payoutsAnswered, expectedPayouts]],
    2,
  );
  if (run.status !== 200) note(`the answer: ${run.body.slice(0, 300)}`);
  const met = run.status === 200 && run.answeredS < targetS;
  note(
    `generation ${run.status === 200 ? `answered in ${fmt(run.answeredS, 2)} s` : `answered ${run.status} after ${fmt(run.answeredS, 2)} s, payouts all in place after ${run.completedS === undefined ? "(never, within the wait)" : `${fmt(run.completedS, 2)} s`}`} (target < ${targetS} s): ${met ? "met" : "MISSED"}`,
  );
  printTable(
    "H. The payouts and the ledger afterwards",
    ["check", "found", "expected", "ok"],
    [
      ["pending payouts", check.payouts, expectedPayouts, check.payouts === expectedPayouts ? "yes" : "NO"],
      ["drafts left", check.drafts, 0, check.drafts === 0 ? "yes" : "NO"],
      [
        "partnerships with more than one payout",
        check.partnershipsWithSeveral,
        0,
        check.partnershipsWithSeveral === 0 ? "yes" : "NO",
      ],
      [
        "sum of payout amounts, cents",
        check.payoutCents,
        check.commissionCents,
        check.payoutCents === check.commissionCents ? "yes" : "NO",
      ],
      [
        "commissions counted by the payouts",
        check.payoutCommissionCount,
        check.commissions,
        check.payoutCommissionCount === check.commissions ? "yes" : "NO",
      ],
      ["commissions without a payout_id", check.unlinked, 0, check.unlinked === 0 ? "yes" : "NO"],
      [
        "commissions linked both ways to their partnership's payout",
        check.linkedConsistently,
        check.commissions,
        check.linkedConsistently === check.commissions ? "yes" : "NO",
      ],
      [
        "open payouts not equal to their links",
        check.payoutsOffTheirLinks,
        0,
        check.payoutsOffTheirLinks === 0 ? "yes" : "NO",
      ],
    ],
  );
  note(`every commission is in its partnership's one payout: ${verified ? "yes" : "NO"}`);
  const payouts = Math.max(1, check.payouts);
  printCpuTable(
    `H. CPU by process during the generation (${fmt(metered.wallSeconds, 1)} s metered, settling included)`,
    [
      ["CPU seconds, whole generation", { ...metered, cpuMsPerRequest: metered.cpuSeconds }],
      [
        `CPU ms per payout (${fmt(check.payouts)})`,
        {
          ...metered,
          cpuMsPerRequest: Object.fromEntries(
            Object.entries(metered.cpuSeconds).map(([label, seconds]) => [label, (seconds * 1000) / payouts]),
          ),
        },
      ],
    ],
  );
  return {
    partnerships: partnerships.length,
    commissions: seeded.payments,
    seedSeconds,
    status: run.status,
    answeredS: run.answeredS,
    completedS: run.completedS,
    payoutsAnswered: run.payoutsAnswered,
    check,
    verified,
    cpuSeconds: metered.cpuSeconds,
    coresBusy: metered.coresBusy,
    ...(metered.database ? { database: metered.database } : {}),
  };
}

/**
 * After a non-200 answer: waits until the product has `expected` pending payouts and no drafts,
 * or until nothing has changed for a while (the generation stopped short). True when complete.
 */
async function waitForCompletion(ctx: BenchContext, productId: string, expected: number): Promise<boolean> {
  const deadline = Date.now() + completionTimeoutMs;
  let last = "";
  let lastChange = Date.now();
  while (Date.now() < deadline) {
    const [row] = await ctx.sql<{ payouts: number; drafts: number }[]>`
      select count(*) filter (where status = 'pending')::int as payouts,
             count(*) filter (where status = 'draft')::int as drafts
      from payouts.payouts where product_id = ${productId}`;
    if (row && row.payouts >= expected && row.drafts === 0) return true;
    const state = JSON.stringify(row);
    if (state !== last) {
      last = state;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > stallMs) {
      return false;
    }
    await sleep(100);
  }
  return false;
}

async function checkPayouts(ctx: BenchContext, productId: string): Promise<PayoutCheck> {
  // Sums as text: bigint sums of a large product may not fit a 32-bit int.
  const [row] = await ctx.sql<Record<keyof PayoutCheck, string>[]>`
    select
      (select count(*) from payouts.payouts where product_id = ${productId} and status = 'pending')::text as payouts,
      (select count(*) from payouts.payouts where product_id = ${productId} and status = 'draft')::text as drafts,
      (select coalesce(sum(amount_cents), 0) from payouts.payouts
        where product_id = ${productId} and status = 'pending')::text as "payoutCents",
      (select coalesce(sum(commission_count), 0) from payouts.payouts
        where product_id = ${productId} and status = 'pending')::text as "payoutCommissionCount",
      (select count(*) from (select partnership_id from payouts.payouts where product_id = ${productId}
        group by partnership_id having count(*) > 1) several)::text as "partnershipsWithSeveral",
      (select count(*) from ledger.commissions where product_id = ${productId})::text as commissions,
      (select coalesce(sum(amount_cents), 0) from ledger.commissions
        where product_id = ${productId})::text as "commissionCents",
      (select count(*) from ledger.commissions
        where product_id = ${productId} and payout_id is null)::text as unlinked,
      (select count(*) from ledger.commissions c
        join payouts.payout_commissions pc on pc.commission_id = c.id and pc.payout_id = c.payout_id
        join payouts.payouts p on p.id = c.payout_id and p.partnership_id = c.partnership_id and p.status = 'pending'
        where c.product_id = ${productId})::text as "linkedConsistently",
      (select count(*) from payouts.payouts p
        where p.product_id = ${productId} and p.status in ('pending', 'approved', 'failed')
          and p.amount_cents <> coalesce((select sum(amount_cents) from payouts.payout_commissions where payout_id = p.id), 0)
                              + coalesce((select sum(amount_cents) from payouts.adjustments where payout_id = p.id), 0)
      )::text as "payoutsOffTheirLinks"`;
  if (!row) throw new Error("the payouts check answered no row");
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)])) as unknown as PayoutCheck;
}
