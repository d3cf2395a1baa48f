import { type BenchContext, gatewayHasRoute } from "../lib/context.js";
import { compareLoads, describeNon2xx, type LoadResult } from "../lib/load.js";
import {
  type Payee,
  type PaymentTotals,
  rollupMismatches,
  seedApprovedPayments,
  seedPartnerships,
  setSponsors,
} from "../lib/seed.js";
import { fmt, note, printCpuTable, printTable } from "../lib/table.js";

/** After the run, in the ledger: what the refunds really did. */
interface LedgerCheck {
  /** Payments of the product with any refund recorded. */
  refundedPayments: number;
  /** Of those, refunded in full (refunded_cents = amount_cents). */
  fullyRefunded: number;
  /** Level-1 commissions of refunded payments that are `refunded` with amount 0. */
  levelOneVoided: number;
  /** Level-2 commissions of refunded payments, and how many of them are `refunded` with amount 0. */
  levelTwo: number;
  levelTwoVoided: number;
  /** Completed idempotency records of the product: one per keyed refund that went through. */
  idempotencyKeys: number;
  /** Rollup rows disagreeing with the commissions and events (0 and 0 when consistent). */
  rollupMismatches: { daily: number; partnerships: number };
}

export type RefundsResult =
  | { skipped: string }
  | {
      connections: number;
      durationS: number;
      rounds: number;
      seededPayments: number;
      seedSeconds: number;
      /** external_ids handed to requests (warm-up included, and the last one built per connection that was never sent). */
      handedOut: number;
      /** Requests sent after the seeded payments ran out (they answer 404). */
      exhausted: number;
      /** Closed loop: every connection sends its next refund as soon as the last is answered. */
      refunds: LoadResult;
      /** The same connections offered half of `refunds`' throughput, then a quiet rate. */
      paced: (LoadResult & { name: string; offeredRate: number })[];
      before: { rollupMismatches: { daily: number; partnerships: number } };
      after: LedgerCheck;
      /** Every refunded payment's level-1 (and level-2) commission is refunded with amount 0. */
      verified: boolean;
    };

const targetP99Ms = 100;
const connections = 20;
/** Refunds per second of a quiet program, for the latency of a refund on an idle mesh. */
const quietRate = 5;
/** Payees of the seeded payments: affiliates spread over a few sponsors, so every payment has a level 2. */
const affiliateCount = 200;
const sponsorCount = 20;
const refundsPath = "/api/v1/refunds";
const caseName = "POST /api/v1/refunds (full, by external_id, half keyed)";

interface RefundAnswer {
  data: { status: string; new_commission_cents: number; fully_refunded: boolean };
}

/**
 * G. Full refunds of distinct live payments, identified by external_id, under 20 connections.
 * The payments (level-1 and level-2 commissions, approved, with matching rollups) are seeded by
 * COPY first; every request takes the next unused external_id, and every other one carries an
 * Idempotency-Key, so half the requests also go through the idempotency record. Afterwards the
 * ledger is asked whether every refunded payment's commissions really are refunded and 0.
 */
export async function refunds(ctx: BenchContext): Promise<RefundsResult> {
  const { config, gateway, sql } = ctx;
  const product = await ctx.createProduct("bench refunds");
  const headers = { "x-api-key": product.liveKey };
  if (!(await gatewayHasRoute(gateway, "POST", refundsPath, product.liveKey))) {
    const skipped = `POST ${refundsPath} not available`;
    console.log(`\nG. Refunds\n  skipped: ${skipped}`);
    return { skipped };
  }

  const stamp = Date.now().toString(36);
  const seedStarted = performance.now();
  const partnerships = await seedPartnerships(sql, product.productId, sponsorCount + affiliateCount, `rfd-${stamp}`);
  const sponsors = partnerships.slice(0, sponsorCount);
  const payees: Payee[] = partnerships.slice(sponsorCount).map((partnership, i) => ({
    partnership,
    sponsor: sponsors[i % sponsorCount],
  }));
  await setSponsors(
    sql,
    payees.flatMap(({ partnership, sponsor }) => (sponsor ? [{ partnership, sponsor }] : [])),
  );
  const seeded: PaymentTotals = await seedApprovedPayments(
    sql,
    product.productId,
    payees,
    config.refundPayments,
    `pay-${stamp}`,
  );
  // As F does: a long-lived database has vacuumed, analyzed and checkpointed a bulk load long ago.
  for (const table of ["tracking_events", "commissions", "daily_rollups", "partnership_rollups"]) {
    await sql.unsafe(`vacuum (analyze) ledger.${table}`);
  }
  await sql`checkpoint`;
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const before = { rollupMismatches: await rollupMismatches(sql, product.productId) };
  console.log(
    `  seeded ${fmt(seeded.payments)} approved payments (${fmt(seeded.payments + seeded.levelTwoCommissions)} commissions) over ${fmt(affiliateCount)} affiliates with ${sponsorCount} sponsors in ${seedSeconds.toFixed(1)} s; rollup rows disagreeing: daily ${before.rollupMismatches.daily}, partnerships ${before.rollupMismatches.partnerships}`,
  );

  // In random order, as refunds arrive: taken in seeding order (oldest first), 20 concurrent
  // refunds would all land on one day's rollup rows, a hot spot no real product has.
  const order = [...seeded.externalIds];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as string, order[i] as string];
  }
  // Each request takes the next payment; past the end, ids that match nothing (404, counted).
  let next = 0;
  let exhausted = 0;
  let current = 0;
  const takePayment = () => {
    current = next++;
    const externalId = order[current];
    if (externalId !== undefined) return externalId;
    exhausted++;
    return `exhausted-${stamp}-${current}`;
  };
  const body = () => ({ external_id: takePayment() });
  // Called right after body() for the same request: every other request is keyed.
  const requestHeaders = () => (current % 2 === 0 ? { "idempotency-key": `rfd-${stamp}-${current}` } : undefined);

  // One by hand first: the route answers what a full refund should, before the load.
  const firstBody = body();
  const first = await gateway.json<RefundAnswer>(refundsPath, {
    method: "POST",
    headers: { ...headers, ...requestHeaders() },
    body: firstBody,
  });
  console.log(
    `  a full refund answers status ${first.data.status}, new commission ${first.data.new_commission_cents}, fully_refunded ${first.data.fully_refunded}`,
  );

  const refundCase = {
    name: caseName,
    url: `${ctx.mesh.gatewayUrl}${refundsPath}`,
    method: "POST" as const,
    headers,
    body,
    requestHeaders,
  };
  const loadOptions = {
    connections,
    durationS: config.durationS,
    rounds: config.rounds,
    warmupS: config.warmupS,
    processes: ctx.processes(),
    database: ctx.database,
  };
  const result = (await compareLoads([refundCase], loadOptions))[caseName] as LoadResult;
  // At saturation a closed loop's latency is mostly queueing (20 connections / throughput). The
  // same connections offered half that rate show the latency with room to spare, and a quiet
  // rate what a refund costs on an otherwise idle mesh. autocannon sends each connection's share
  // of a second at the start of the second (and opens at most one connection per request per
  // second), so offered rates arrive in bursts: their p99 is a burst's tail.
  const paced: (LoadResult & { name: string; offeredRate: number })[] = [];
  for (const offeredRate of [Math.max(1, Math.floor(result.requestsPerSecond / 2)), quietRate]) {
    const name = `same, offered ${offeredRate}/s${paced.length === 0 ? " (half of the above)" : ""}`;
    const load = await compareLoads([{ ...refundCase, name, offeredRate }], { ...loadOptions, warmupS: 0 });
    paced.push({ ...(load[name] as LoadResult), name, offeredRate });
  }
  const after = await checkLedger(ctx, product.productId);
  const verified =
    after.refundedPayments > 0 &&
    after.levelOneVoided === after.refundedPayments &&
    after.levelTwoVoided === after.levelTwo &&
    after.fullyRefunded === after.refundedPayments;

  printTable(
    `G. Refunds: ${connections} connections, ${config.durationS} s (${config.rounds} rounds), each a full refund of a distinct payment`,
    ["case", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors"],
    [{ ...result, name: caseName }, ...paced].map((load) => [
      load.name,
      load.requestsPerSecond,
      load.p50Ms,
      load.p99Ms,
      describeNon2xx(load),
      load.errors + load.timeouts,
    ]),
  );
  const verdict = (p99: number) => `p99 ${fmt(p99)} ms: ${p99 < targetP99Ms ? "met" : "MISSED"}`;
  note(
    `target p99 < ${targetP99Ms} ms at ${connections} connections. At saturation ${verdict(result.p99Ms)}; ${paced.map((load) => `offered ${load.offeredRate}/s ${verdict(load.p99Ms)}`).join("; ")}`,
  );
  note(
    `external_ids handed out ${fmt(next)} of ${fmt(seeded.payments)} seeded${exhausted > 0 ? `; ${fmt(exhausted)} requests found the seeded payments used up (404): raise BENCH_REFUND_PAYMENTS` : ""}`,
  );
  printTable(
    "G. The ledger afterwards",
    ["check", "found", "expected", "ok"],
    [
      ["payments with a refund", after.refundedPayments, "> 0", after.refundedPayments > 0 ? "yes" : "NO"],
      [
        "  of which refunded in full",
        after.fullyRefunded,
        after.refundedPayments,
        after.fullyRefunded === after.refundedPayments ? "yes" : "NO",
      ],
      [
        "  their level-1 commission refunded, amount 0",
        after.levelOneVoided,
        after.refundedPayments,
        after.levelOneVoided === after.refundedPayments ? "yes" : "NO",
      ],
      [
        "  their level-2 commission refunded, amount 0",
        after.levelTwoVoided,
        after.levelTwo,
        after.levelTwoVoided === after.levelTwo ? "yes" : "NO",
      ],
      ["completed idempotency keys (half the refunds)", after.idempotencyKeys, "~ half", ""],
      [
        "rollup rows disagreeing with commissions (daily / partnership)",
        `${after.rollupMismatches.daily} / ${after.rollupMismatches.partnerships}`,
        "0 / 0",
        after.rollupMismatches.daily + after.rollupMismatches.partnerships === 0 ? "yes" : "NO",
      ],
    ],
  );
  note(
    `every refunded payment's commissions are refunded with amount 0: ${verified ? "yes, the figure is for refunds really applied" : "NO"}`,
  );
  printCpuTable(`G. CPU ms per request by process (${connections} connections)`, [
    [caseName, result],
    ...paced.map((load): [string, LoadResult] => [load.name, load]),
  ]);
  return {
    connections,
    durationS: config.durationS,
    rounds: config.rounds,
    seededPayments: seeded.payments,
    seedSeconds,
    handedOut: next,
    exhausted,
    refunds: result,
    paced,
    before,
    after,
    verified,
  };
}

async function checkLedger(ctx: BenchContext, productId: string): Promise<LedgerCheck> {
  const [row] = await ctx.sql<Omit<LedgerCheck, "rollupMismatches">[]>`
    with refunded as (
      select id, amount_cents, refunded_cents from ledger.tracking_events
      where product_id = ${productId} and event_type = 'payment' and refunded_cents > 0
    )
    select
      (select count(*) from refunded)::int as "refundedPayments",
      (select count(*) from refunded where refunded_cents = amount_cents)::int as "fullyRefunded",
      (select count(*) from ledger.commissions c join refunded r on r.id = c.event_id
        where c.level = 1 and c.status = 'refunded' and c.amount_cents = 0)::int as "levelOneVoided",
      (select count(*) from ledger.commissions c join refunded r on r.id = c.event_id
        where c.level = 2)::int as "levelTwo",
      (select count(*) from ledger.commissions c join refunded r on r.id = c.event_id
        where c.level = 2 and c.status = 'refunded' and c.amount_cents = 0)::int as "levelTwoVoided",
      (select count(*) from ledger.idempotency_keys
        where product_id = ${productId} and state = 'completed')::int as "idempotencyKeys"`;
  if (!row) throw new Error("the ledger check answered no row");
  return { ...row, rollupMismatches: await rollupMismatches(ctx.sql, productId) };
}
