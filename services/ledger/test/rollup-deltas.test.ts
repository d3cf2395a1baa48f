import { Period } from "@affiliate/proto/ledger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { foldRollupDeltas } from "../src/domain/compact-rollups.js";
import { RollupChanges } from "../src/domain/rollup-changes.js";
import { statsWindows } from "../src/domain/stats.js";
import {
  day,
  EventType,
  type Harness,
  invariantViolations,
  newAffiliate,
  newProduct,
  startHarness,
  track,
  trackBatch,
  unique,
} from "./harness.js";

// Issue 28: writers insert rollup deltas instead of upserting shared rollup rows; a compaction
// folds them; readers sum both (migration 0010).

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  h.clock.now = new Date(Date.UTC(2026, 10, 20, 15, 30, 0));
});
afterAll(() => h.close());

const hour = 3600_000;
const at = (msBeforeNow: number) => new Date(h.clock.now.getTime() - msBeforeNow);
const rejections = (settled: PromiseSettledResult<unknown>[]) =>
  settled.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : []));

/** Ends a transaction the test held open without committing what it wrote. */
class RolledBack extends Error {}

/** The product's figures over [from, to) recounted from the events and commissions themselves. */
async function recount(productId: string, [from, to]: [Date, Date]) {
  const [row] = await h.sql<{ clicks: number; conversions: number; revenue: bigint; commissions: bigint }[]>`
    select (select count(*) from tracking_events where product_id = ${productId} and event_type = 'click'
              and occurred_at >= ${from} and occurred_at < ${to})::int8 as clicks,
           (select count(*) from tracking_events where product_id = ${productId} and event_type = 'payment'
              and partnership_id is not null and occurred_at >= ${from} and occurred_at < ${to})::int8 as conversions,
           (select coalesce(sum(amount_cents), 0) from tracking_events where product_id = ${productId}
              and event_type = 'payment' and partnership_id is not null
              and occurred_at >= ${from} and occurred_at < ${to}) as revenue,
           (select coalesce(sum(amount_cents), 0) from commissions where product_id = ${productId}
              and status <> 'rejected' and payment_occurred_at >= ${from} and payment_occurred_at < ${to}) as commissions`;
  return {
    clicks: BigInt(row?.clicks ?? 0),
    conversions: BigInt(row?.conversions ?? 0),
    revenueCents: row?.revenue,
    commissionsCents: row?.commissions,
  };
}

async function expectStatsEqualTheEvents(productId: string) {
  for (const [period, name] of [
    [Period.PERIOD_7D, "7d"],
    [Period.PERIOD_12M, "12m"],
  ] as const) {
    const stats = await h.ledger.getStats({ productId, period });
    const windows = statsWindows(name, h.clock.now);
    expect(stats.current, name).toMatchObject(await recount(productId, windows.current));
    expect(stats.previous, name).toMatchObject(await recount(productId, windows.previous));
  }
}

const deltasOf = async (productId: string) => {
  const [row] = await h.sql<{ count: number }[]>`
    select count(*)::int as count from activity_deltas where product_id = ${productId}`;
  return row?.count ?? 0;
};

describe("no hot rows on the write path", () => {
  it("a transaction holding a partnership's rollup rows and its own deltas holds up none of 20 concurrent writers of that partnership", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    // The partnership's rollup rows exist, as they do for any affiliate with history.
    await track(h, { productId, type: EventType.CLICK, referralCode: aff.code });
    await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 5000n,
      externalId: unique("pay"),
    });
    await foldRollupDeltas(h.sql);

    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const holder = h.sql
      .begin(async (tx) => {
        // What a fold holds: every rollup row of the partnership, its sponsor and its product.
        await tx`select 1 from partnership_rollups where partnership_id in (${aff.id}, ${sponsor.id}) for update`;
        await tx`select 1 from partnership_daily_rollups where partnership_id in (${aff.id}, ${sponsor.id}) for update`;
        await tx`select 1 from partnership_hourly_rollups where partnership_id in (${aff.id}, ${sponsor.id}) for update`;
        await tx`select 1 from daily_rollups where product_id = ${productId} for update`;
        await tx`select 1 from hourly_rollups where product_id = ${productId} for update`;
        // And what another writer of the partnership holds until its commit: its deltas.
        const changes = new RollupChanges();
        changes.addActivity(productId, h.clock.now, { clicks: 1 }, aff.id);
        changes.addPartnership(productId, aff.id, { clicks: 1 });
        await changes.flush(tx);
        holding();
        await released;
        throw new RolledBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    await held;

    // Each within a 10 s deadline, which bounds its lock waits (lock_timeout): a writer that needed
    // a row the holder has would fail, since the holder lets go only after every writer is done.
    const settled = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        track(
          h,
          i % 2 === 0
            ? { productId, type: EventType.CLICK, referralCode: aff.code }
            : {
                productId,
                type: EventType.PAYMENT,
                referralCode: aff.code,
                amountCents: BigInt(1000 + i),
                externalId: unique("pay"),
              },
          { timeoutMs: 10_000 },
        ),
      ),
    );
    release();
    await holder;
    expect(rejections(settled)).toEqual([]);

    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id, sponsor.id] });
    expect(stats[aff.id]).toMatchObject({ clicks: 11n, conversions: 11n });
    expect(stats[sponsor.id]).toMatchObject({ approvedCount: 11n });
    expect(await invariantViolations(h.sql)).toEqual([]);
  });
});

describe("folding deltas into the rollups", () => {
  it("moves them into one row per key; stats, series and partnership figures do not change", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    for (let i = 0; i < 24; i++) {
      const payment = i % 4 === 0;
      await track(h, {
        productId,
        type: payment ? EventType.PAYMENT : EventType.CLICK,
        referralCode: aff.code,
        occurredAt: at((i % 3) * day + (i % 5) * hour),
        ...(payment ? { amountCents: BigInt(2000 + i), externalId: unique("pay") } : {}),
      });
    }
    await track(h, { productId, type: EventType.SIGNUP, occurredAt: at(hour) }); // unattributed
    const figures = () =>
      Promise.all([
        h.ledger.getStats({ productId, period: Period.PERIOD_30D }),
        h.ledger.getTimeseries({ productId, period: Period.PERIOD_30D }),
        h.ledger.getStats({ productId, partnershipId: aff.id, period: Period.PERIOD_7D }),
        h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id] }),
      ]);
    const before = await figures();
    expect(await deltasOf(productId)).toBe(25);

    const moved = await foldRollupDeltas(h.sql);
    expect(moved?.activity).toBeGreaterThanOrEqual(25);

    expect(await deltasOf(productId)).toBe(0);
    const rowsPerDay = await h.sql<{ rows: number }[]>`
      select count(*)::int as rows from daily_rollups where product_id = ${productId} group by day`;
    expect(rowsPerDay.map((r) => r.rows)).toEqual([1, 1, 1]);
    expect(await figures()).toEqual(before);
    expect(await invariantViolations(h.sql)).toEqual([]);
  });

  it("runs on one replica at a time: while another holds the compaction's lock, a fold moves nothing", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    await track(h, { productId, type: EventType.SIGNUP });
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const other = h.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext('ledger.rollup_compaction'))`;
      holding();
      await released;
    });
    await held;
    const whileHeld = await foldRollupDeltas(h.sql);
    release();
    await other;
    expect(whileHeld).toBeNull();
    expect(await deltasOf(productId)).toBe(1);
    expect((await foldRollupDeltas(h.sql))?.activity).toBeGreaterThanOrEqual(1);
    expect(await deltasOf(productId)).toBe(0);
  });

  it("beside concurrent payments, refunds, clicks and batches, stats stay equal to a recount of the events", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const other = await newAffiliate(h, productId);
    const paid: string[] = [];
    for (let i = 0; i < 8; i++) {
      const externalId = unique("old");
      paid.push(externalId);
      await track(h, {
        productId,
        type: EventType.PAYMENT,
        referralCode: i % 2 === 0 ? aff.code : other.code,
        amountCents: BigInt(10_000 + i),
        externalId,
        occurredAt: at((i % 4) * day + i * hour),
      });
    }

    // Folds one small batch after another for as long as the writers run, so they interleave.
    let writing = true;
    const folding = (async () => {
      while (writing) await foldRollupDeltas(h.sql, 7);
    })();
    const settled = await Promise.allSettled([
      ...Array.from({ length: 20 }, (_, i) =>
        track(h, {
          productId,
          type: EventType.CLICK,
          referralCode: [aff.code, other.code, sponsor.code][i % 3],
          occurredAt: at((i % 6) * hour),
        }),
      ),
      ...Array.from({ length: 12 }, (_, i) =>
        track(h, {
          productId,
          type: EventType.PAYMENT,
          referralCode: i % 3 === 0 ? other.code : aff.code,
          amountCents: BigInt(3000 + i),
          externalId: unique("pay"),
          occurredAt: at((i % 2) * day + (i % 5) * hour),
        }),
      ),
      ...paid.map((externalId, i) =>
        h.ledger.refund({
          productId,
          identification: { case: "externalId", value: externalId },
          ...(i % 2 === 0 ? { refundAmountCents: BigInt(1000 + i) } : {}),
        }),
      ),
      trackBatch(
        h,
        Array.from({ length: 40 }, (_, i) => ({
          productId,
          type: i % 10 === 0 ? EventType.PAYMENT : EventType.CLICK,
          referralCode: i % 2 === 0 ? aff.code : other.code,
          occurredAt: at((i % 3) * hour),
          ...(i % 10 === 0 ? { amountCents: BigInt(500 + i), externalId: unique("batch") } : {}),
        })),
      ),
    ]);
    writing = false;
    await folding;
    expect(rejections(settled)).toEqual([]);

    // Exact with some deltas still unfolded, and again with all of them folded.
    expect(await invariantViolations(h.sql)).toEqual([]);
    await expectStatsEqualTheEvents(productId);
    await foldRollupDeltas(h.sql);
    expect(await deltasOf(productId)).toBe(0);
    expect(await invariantViolations(h.sql)).toEqual([]);
    await expectStatsEqualTheEvents(productId);
    const [events] = await h.sql<{ clicks: number }[]>`
      select count(*)::int as clicks from tracking_events
      where partnership_id = ${aff.id} and event_type = 'click'`;
    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id] });
    expect(stats[aff.id]?.clicks).toBe(BigInt(events?.clicks ?? -1));
  });
});
