import { newId } from "@affiliate/platform";
import { CommissionAction, Period } from "@affiliate/proto/ledger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveDueCommissions } from "../src/domain/approve-due-commissions.js";
import { deleteUnreachableHours, foldRollupDeltas } from "../src/domain/compact-rollups.js";
import { periodDays, statsWindows, windowReachDays } from "../src/domain/stats.js";
import type { Period as LedgerPeriod } from "../src/domain/types.js";
import {
  day,
  EventType,
  type Harness,
  invariantViolations,
  newAffiliate,
  newProduct,
  planOf,
  recordStatements,
  startHarness,
  track,
  trackBatch,
  unique,
  uniqueEmail,
} from "./harness.js";

// Contract section 16: a stats answer costs the same whatever the number of events.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  // Mid-hour, mid-day: every window has partial days (and a partial current hour) at its edges.
  h.clock.now = new Date(Date.UTC(2026, 10, 20, 15, 30, 0));
});
afterAll(() => h.close());

const hour = 3600_000;
const periods: [Period, LedgerPeriod][] = [
  [Period.PERIOD_7D, "7d"],
  [Period.PERIOD_30D, "30d"],
  [Period.PERIOD_90D, "90d"],
  [Period.PERIOD_12M, "12m"],
];

/** What the raw events and commissions of [from, to) add up to: the truth a stats answer must equal. */
async function rawTruth(productId: string, [from, to]: [Date, Date]) {
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
  for (const [period, name] of periods) {
    const stats = await h.ledger.getStats({ productId, period });
    const windows = statsWindows(name, h.clock.now);
    expect(stats.current, name).toMatchObject(await rawTruth(productId, windows.current));
    expect(stats.previous, name).toMatchObject(await rawTruth(productId, windows.previous));
  }
}

/**
 * The access paths of every statement the stats path runs (summary of every period, the 7-day
 * and 12-month series), as Postgres plans them now: for each scan, its table and index.
 */
async function statsPlans(productId: string): Promise<string[][]> {
  const sent = await recordStatements(h, async () => {
    for (const [period] of periods) await h.ledger.getStats({ productId, period });
    for (const period of [Period.PERIOD_7D, Period.PERIOD_12M]) await h.ledger.getTimeseries({ productId, period });
  });
  const plans: string[][] = [];
  for (const statement of sent) {
    const nodes = await planOf(h.sql, statement);
    plans.push(
      nodes
        .filter((node) => node["Relation Name"] !== undefined || node["Index Name"] !== undefined)
        .map((node) => [node["Node Type"], node["Relation Name"], node["Index Name"]].filter(Boolean).join(" ")),
    );
  }
  return plans;
}

describe("stats read rollups only", () => {
  it("with 10x the events today: the same plan, no node on an events or commissions table, answers equal to the events", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    let tracked = 0;
    /** `count` events since midnight (a payment in ten), in batches of 500. */
    const trackToday = async (count: number) => {
      const midnight = Date.UTC(2026, 10, 20);
      const events = Array.from({ length: count }, (_, i) => {
        const n = tracked + i;
        const occurredAt = new Date(midnight + ((n * 7919) % (15.5 * hour)));
        return n % 10 === 0
          ? {
              productId,
              type: EventType.PAYMENT,
              referralCode: aff.code,
              amountCents: BigInt(1000 + n),
              externalId: `today-${n}`,
              occurredAt,
            }
          : { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt };
      });
      tracked += count;
      for (let start = 0; start < events.length; start += 500) {
        const { results } = await trackBatch(h, events.slice(start, start + 500));
        expect(results.filter((r) => r.outcome.case !== "tracked")).toEqual([]);
      }
    };
    // History at the old edges too: a window's first day and the previous period's.
    for (const daysAgo of [7, 30, 90, 365]) {
      await track(h, {
        productId,
        type: EventType.PAYMENT,
        referralCode: aff.code,
        amountCents: 5000n,
        externalId: unique("old"),
        occurredAt: new Date(h.clock.now.getTime() - daysAgo * day + 2 * hour),
      });
    }

    // As the compaction does, now and then: the deltas left to read stay few.
    await trackToday(100);
    await foldRollupDeltas(h.sql);
    const plans = await statsPlans(productId);
    await expectStatsEqualTheEvents(productId);

    await trackToday(900);
    await foldRollupDeltas(h.sql);
    expect(await statsPlans(productId)).toEqual(plans);
    await expectStatsEqualTheEvents(productId);

    const sent = await recordStatements(h, () => h.ledger.getStats({ productId, period: Period.PERIOD_12M }));
    expect(sent).toHaveLength(1);
    const touched = new Set<string>();
    for (const statement of sent) {
      for (const node of await planOf(h.sql, statement)) if (node["Relation Name"]) touched.add(node["Relation Name"]);
    }
    expect([...touched].sort()).toEqual(["activity_deltas", "daily_rollups", "hourly_rollups"]);
    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_7D });
    expect(stats.current).toMatchObject({ clicks: 900n, conversions: 101n });
  });
});

describe("window edges on the hour", () => {
  it("every period ends with the current hour and starts on an hour; the previous period just before it", () => {
    for (const now of [new Date("2026-11-20T15:30:00Z"), new Date("2026-11-20T15:00:00.000Z")]) {
      for (const [, name] of periods) {
        const { current, previous } = statsWindows(name, now);
        expect(current[1]).toEqual(new Date("2026-11-20T16:00:00Z"));
        const length = periodDays[name] * day;
        expect(current[0]).toEqual(new Date(current[1].getTime() - length));
        expect(previous).toEqual([new Date(current[0].getTime() - length), current[0]]);
      }
    }
  });

  it("12m: the window starts 365 days before the end of the current hour, and that hour counts whole", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const end = new Date("2026-11-20T16:00:00Z");
    const year = 365 * day;
    const clicks = [
      new Date(end.getTime() - 1), // later in the current hour (up to 5 minutes ahead of now is accepted)
      h.clock.now,
      new Date(end.getTime() - year), // the current window's first millisecond
      new Date(end.getTime() - year - 1), // previous period
      new Date(end.getTime() - year - 30 * 60_000), // 12 months before now: previous period
    ];
    h.clock.now = new Date(end.getTime() - 1);
    try {
      for (const occurredAt of clicks)
        await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt });
      const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_12M });
      expect(stats.current?.clicks).toBe(3n);
      expect(stats.previous?.clicks).toBe(2n);
    } finally {
      h.clock.now = new Date(Date.UTC(2026, 10, 20, 15, 30, 0));
    }
    expect(await h.ledger.getStats({ productId, period: Period.PERIOD_12M })).toMatchObject({
      current: { clicks: 3n },
      previous: { clicks: 2n },
    });
  });
});

describe("hourly rollups stay exact", () => {
  /** The product's hourly figures added up per day, and its daily figures. */
  const hourlyAndDaily = async (productId: string) =>
    h.sql<{ day: string; source: string; figures: string }[]>`
      select to_char((hour at time zone 'UTC')::date, 'YYYY-MM-DD') as day, 'hourly' as source,
             concat_ws(',', sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents)) as figures
      from hourly_figures where product_id = ${productId} group by 1
      union all
      select to_char(day, 'YYYY-MM-DD'), 'daily',
             concat_ws(',', sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents))
      from daily_figures where product_id = ${productId} group by 1
      order by 1, 2`;

  it("through refunds, rejections, the hold sweep and erasure, hourly = daily = the events and commissions", async () => {
    const productId = await newProduct(h, { holdDays: 1 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const customerEmail = uniqueEmail();
    const payments: { externalId: string; commissionId: string }[] = [];
    for (let i = 0; i < 12; i++) {
      const externalId = unique("pay");
      const { event } = await track(h, {
        productId,
        type: EventType.PAYMENT,
        referralCode: aff.code,
        amountCents: BigInt(3333 + i),
        externalId,
        customerEmail,
        occurredAt: new Date(h.clock.now.getTime() - i * 7 * hour),
      });
      payments.push({ externalId, commissionId: event?.commissions[0]?.id ?? "" });
    }
    const [p0, p1, p2, p3] = payments;
    await h.ledger.refund({ productId, identification: { case: "externalId", value: p0?.externalId ?? "" } });
    await h.ledger.refund({
      productId,
      identification: { case: "externalId", value: p1?.externalId ?? "" },
      refundAmountCents: 1001n,
    });
    await h.ledger.refund({
      productId,
      identification: { case: "emailAndAmount", value: { email: customerEmail, paymentAmountCents: 3335n } },
    });
    await h.ledger.updateCommission({
      productId,
      commissionId: p3?.commissionId ?? "",
      action: CommissionAction.REJECT,
    });
    expect(p2).toBeDefined();
    // Holds end a day after the commission was recorded, by the wall clock.
    expect(await approveDueCommissions(h.sql, new Date(Date.now() + 2 * day))).toBeGreaterThan(0);
    await h.erasure.eraseCustomer({ productId, email: customerEmail, erasureId: newId("ers") });

    expect(await invariantViolations(h.sql)).toEqual([]);
    const rows = await hourlyAndDaily(productId);
    const bySource = (source: string) =>
      rows.filter((r) => r.source === source).map(({ day: d, figures }) => [d, figures]);
    expect(bySource("hourly")).toEqual(bySource("daily"));
    await expectStatsEqualTheEvents(productId);
  });

  // Last: it deletes hours of every product, which the invariants (relative to the database's
  // clock) would then miss.
  it("compaction deletes the hours no window reaches; the days keep their figures", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const old = new Date(h.clock.now.getTime() - 390 * day);
    const recent = new Date(h.clock.now.getTime() - 2 * hour);
    for (const occurredAt of [old, recent]) {
      await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt });
    }
    // A year on, the old click's hour is beyond the reach of any window.
    const later = new Date(h.clock.now.getTime() + 365 * day);
    const cutoff = new Date(Date.UTC(2027, 10, 20) - windowReachDays * day);
    expect(old < cutoff && recent >= cutoff).toBe(true);
    await foldRollupDeltas(h.sql);
    expect(await deleteUnreachableHours(h.sql, later)).toBeGreaterThan(0);

    const hours = await h.sql<{ hour: Date }[]>`
      select distinct hour from hourly_rollups where product_id = ${productId} order by hour`;
    expect(hours.map((row) => row.hour)).toEqual([new Date(Math.floor(recent.getTime() / hour) * hour)]);
    const [days] = await h.sql<{ clicks: number }[]>`
      select sum(clicks)::int8 as clicks from daily_rollups where product_id = ${productId}`;
    expect(days?.clicks).toBe(2);
  });
});
