import { fieldErrorsOf } from "@affiliate/platform";
import { CommissionAction, Period } from "@affiliate/proto/ledger";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { day, EventType, type Harness, newAffiliate, newProduct, startHarness, track } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  // A fixed "now" in the middle of a UTC day, so windows have partial days at both edges.
  h.clock.now = new Date(Date.UTC(2026, 10, 20, 15, 30, 0));
});
afterAll(() => h.close());

const at = (msBeforeNow: number) => new Date(h.clock.now.getTime() - msBeforeNow);
const metrics = (m: Record<string, bigint> | undefined) =>
  m && {
    clicks: m.clicks,
    signups: m.signups,
    conversions: m.conversions,
    revenue: m.revenueCents,
    commissions: m.commissionsCents,
  };

describe("summary stats", () => {
  it("sums the rolling window and the one before it, their edges on the hour (contract 16)", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const clickAt = (occurredAt: Date) =>
      track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt });
    // now is 15:30: the current window ends with the current hour, at 16:00, and is 7 days long.
    const end = new Date(h.clock.now.getTime() + 30 * 60_000);
    const since = (ms: number) => new Date(end.getTime() - ms);
    await clickAt(at(0)); // now: inside
    await clickAt(new Date(h.clock.now.getTime() + 60_000)); // later in the current hour: inside
    await clickAt(since(7 * day)); // exactly at the start, on the hour: inside
    await clickAt(since(7 * day + 1)); // a millisecond before: previous period
    await clickAt(at(7 * day)); // 7 days before now, in the hour before the start: previous period
    await clickAt(since(14 * day)); // the previous period's start: previous period
    await clickAt(since(14 * day + 1)); // before both
    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_7D });
    expect(stats.current?.clicks).toBe(3n);
    expect(stats.previous?.clicks).toBe(3n);
  });

  it("counts signups, attributed payments, revenue and live commission amounts, and the conversion rate", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    for (let i = 0; i < 4; i++)
      await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt: at(day * i) });
    await track(h, { productId, type: EventType.SIGNUP, occurredAt: at(2 * day) });
    const paid = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 10_000n,
      occurredAt: at(3 * day),
    });
    await track(h, { productId, type: EventType.PAYMENT, amountCents: 777n, occurredAt: at(day) }); // unattributed: not a conversion
    const rejected = await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 5000n,
      occurredAt: at(2 * day),
    });
    await h.ledger.updateCommission({
      productId,
      commissionId: rejected.event?.commissions[0]?.id ?? "",
      action: CommissionAction.REJECT,
    });
    await track(h, {
      productId,
      testMode: true,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 99_999n,
    }); // sandbox: never counted

    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_30D });
    expect(metrics(stats.current as unknown as Record<string, bigint>)).toEqual({
      clicks: 4n,
      signups: 1n,
      conversions: 2n,
      revenue: 15_000n,
      commissions: 2000n + 500n, // the rejected payment's commissions (1000 + 250) are excluded
    });
    expect(stats.conversionRate).toBe(0.5);
    expect(paid.event?.commissions).toHaveLength(2);
  });

  it("answers zeros and a rate of 0 without clicks, and refuses an unspecified period", async () => {
    const productId = await newProduct(h);
    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_12M });
    expect(stats.conversionRate).toBe(0);
    expect(stats.current?.clicks).toBe(0n);
    const error = await h.ledger.getStats({ productId }).catch(ConnectError.from);
    expect(fieldErrorsOf(error as ConnectError)?.fieldErrors).toHaveProperty("period");
  });
});

describe("time series", () => {
  it("has one point per UTC day, oldest first, ending today, with zeros for quiet days", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt: at(0) });
    await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 1000n,
      occurredAt: at(2 * day),
    });
    const series = await h.ledger.getTimeseries({ productId, period: Period.PERIOD_7D });
    // Columns: day i is first_date + i days.
    expect(series.firstDate).toBe("2026-11-14");
    expect(series.clicks).toEqual([0n, 0n, 0n, 0n, 0n, 0n, 1n]);
    expect(series.signups).toEqual([0n, 0n, 0n, 0n, 0n, 0n, 0n]);
    expect(series.conversions).toEqual([0n, 0n, 0n, 0n, 1n, 0n, 0n]);
    expect(series.revenueCents).toEqual([0n, 0n, 0n, 0n, 1000n, 0n, 0n]);
    expect(series.commissionsCents).toEqual([0n, 0n, 0n, 0n, 200n, 0n, 0n]);
  });

  it("has 365 days for 12m, ending today", async () => {
    const productId = await newProduct(h);
    const series = await h.ledger.getTimeseries({ productId, period: Period.PERIOD_12M });
    expect(series.firstDate).toBe("2025-11-21");
    for (const column of [
      series.clicks,
      series.signups,
      series.conversions,
      series.revenueCents,
      series.commissionsCents,
    ]) {
      expect(column).toHaveLength(365);
    }
  });
});

describe("one partnership's stats (contract 14)", () => {
  it("sum its own events and the commissions it earns, at either level, in the window and the one before", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const other = await newAffiliate(h, productId);
    for (const occurredAt of [at(0), at(day), at(8 * day)]) {
      await track(h, { productId, type: EventType.CLICK, referralCode: aff.code, occurredAt });
    }
    await track(h, { productId, type: EventType.CLICK, referralCode: other.code, occurredAt: at(0) });
    await track(h, { productId, type: EventType.SIGNUP, referralCode: aff.code, occurredAt: at(day) });
    const pay = (referralCode: string, amountCents: bigint, occurredAt: Date) =>
      track(h, { productId, type: EventType.PAYMENT, referralCode, amountCents, occurredAt });
    await pay(aff.code, 10_000n, at(2 * day));
    await pay(aff.code, 4000n, at(9 * day)); // previous window
    await pay(other.code, 50_000n, at(day));
    const rejected = await pay(aff.code, 6000n, at(day));
    await h.ledger.updateCommission({
      productId,
      commissionId: rejected.event?.commissions[0]?.id ?? "",
      action: CommissionAction.REJECT,
    });

    const of = async (partnershipId: string) => {
      const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_7D, partnershipId });
      return {
        current: metrics(stats.current as unknown as Record<string, bigint>),
        previous: metrics(stats.previous as unknown as Record<string, bigint>),
        rate: stats.conversionRate,
      };
    };
    expect(await of(aff.id)).toEqual({
      // The rejected payment still converted; its commission is excluded.
      current: { clicks: 2n, signups: 1n, conversions: 2n, revenue: 16_000n, commissions: 2000n },
      previous: { clicks: 1n, signups: 0n, conversions: 1n, revenue: 4000n, commissions: 800n },
      rate: 1,
    });
    // The sponsor converted nothing itself; it earns level 2 on its recruit's payments.
    expect((await of(sponsor.id)).current).toEqual({
      clicks: 0n,
      signups: 0n,
      conversions: 0n,
      revenue: 0n,
      commissions: 500n,
    });
    const series = await h.ledger.getTimeseries({ productId, period: Period.PERIOD_7D, partnershipId: aff.id });
    expect(series.clicks).toEqual([0n, 0n, 0n, 0n, 0n, 1n, 1n]);
    expect(series.revenueCents).toEqual([0n, 0n, 0n, 0n, 10_000n, 6000n, 0n]);
    expect(series.commissionsCents).toEqual([0n, 0n, 0n, 0n, 2000n, 0n, 0n]);

    // Another product's view of the partnership: nothing.
    const elsewhere = await h.ledger.getStats({
      productId: await newProduct(h),
      period: Period.PERIOD_7D,
      partnershipId: aff.id,
    });
    expect(elsewhere.current?.clicks).toBe(0n);
  });
});

describe("partnership stats", () => {
  it("batches all-time clicks, conversions, earnings and the commission breakdown", async () => {
    const productId = await newProduct(h, { holdDays: 10 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const idle = await newAffiliate(h, productId);
    await track(h, { productId, type: EventType.CLICK, referralCode: aff.code });
    await track(h, { productId, type: EventType.CLICK, referralCode: aff.code });
    await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 1000n }); // pending 200 + 50
    await track(h, {
      productId,
      type: EventType.PAYMENT,
      referralCode: aff.code,
      amountCents: 2000n,
      occurredAt: at(11 * day),
    }); // approved 400 + 100
    const rejected = await track(h, { productId, type: EventType.PAYMENT, referralCode: aff.code, amountCents: 3000n });
    await h.ledger.updateCommission({
      productId,
      commissionId: rejected.event?.commissions[0]?.id ?? "",
      action: CommissionAction.REJECT,
    });

    const { stats } = await h.ledger.batchGetPartnershipStats({
      productId,
      partnershipIds: [aff.id, sponsor.id, idle.id, "ptn_unknown"],
    });
    expect(stats[aff.id]).toMatchObject({
      clicks: 2n,
      conversions: 3n,
      earnedCents: 600n,
      pendingCount: 1n,
      pendingAmountCents: 200n,
      approvedCount: 1n,
      approvedAmountCents: 400n,
    });
    expect(stats[sponsor.id]).toMatchObject({
      clicks: 0n,
      conversions: 0n,
      earnedCents: 150n,
      pendingCount: 1n,
      approvedCount: 1n,
    });
    expect(stats[idle.id]).toMatchObject({ clicks: 0n, earnedCents: 0n });
    expect(stats.ptn_unknown).toMatchObject({ clicks: 0n, earnedCents: 0n });
  });

  it("another product's partnership reads as zeros", async () => {
    const other = await newProduct(h);
    const aff = await newAffiliate(h, other);
    await track(h, { productId: other, type: EventType.CLICK, referralCode: aff.code });
    const { stats } = await h.ledger.batchGetPartnershipStats({
      productId: await newProduct(h),
      partnershipIds: [aff.id],
    });
    expect(stats[aff.id]?.clicks).toBe(0n);
  });
});

describe("rollups stay equal to the rows they summarise", () => {
  it("concurrent payments of one sponsored affiliate all succeed", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const sponsor = await newAffiliate(h, productId);
    const aff = await newAffiliate(h, productId, { sponsorReferralCode: sponsor.code });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        track(h, {
          productId,
          type: EventType.PAYMENT,
          referralCode: aff.code,
          amountCents: BigInt(1000 + i),
          occurredAt: at(i * 3600_000),
        }),
      ),
    );
    expect(
      outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason)),
    ).toEqual([]);
    const { stats } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id, sponsor.id] });
    expect(stats[aff.id]?.conversions).toBe(40n);
    expect(stats[sponsor.id]?.approvedCount).toBe(40n);
  });

  it("daily commission sums and partnership buckets match the commissions table", async () => {
    const daily = await h.sql`
      select r.product_id, r.day, r.total, coalesce(c.total, 0) as actual from
        (select product_id, day, sum(commissions_cents) as total from daily_figures group by 1, 2) r
        left join (select product_id, (payment_occurred_at at time zone 'UTC')::date as day, sum(amount_cents) as total
                   from commissions where status <> 'rejected' group by 1, 2) c using (product_id, day)
      where r.total <> coalesce(c.total, 0)`;
    expect(daily).toEqual([]);
    const buckets = await h.sql`
      select r.partnership_id from
        (select partnership_id, sum(pending_amount_cents) as pending, sum(approved_amount_cents) as approved,
                sum(pending_count) as pending_count from partnership_figures group by 1) r
        left join (select partnership_id,
                     coalesce(sum(amount_cents) filter (where status = 'pending'), 0) as pending,
                     coalesce(sum(amount_cents) filter (where status = 'approved'), 0) as approved,
                     count(*) filter (where status = 'pending') as pending_count
                   from commissions group by 1) c using (partnership_id)
      where r.pending <> coalesce(c.pending, 0) or r.approved <> coalesce(c.approved, 0)
         or r.pending_count <> coalesce(c.pending_count, 0)`;
    expect(buckets).toEqual([]);
  });
});

describe("totals past 2^53 (contract section 11: every total is exact)", () => {
  // 2^53 + 1: the first integer a JS number cannot hold. It takes 90,072 payments at the
  // 100,000,000,000-cent limit to reach it; rows are seeded past it instead of paid.
  const beyond = 9_007_199_254_740_993n;

  it("stats, time series, partnership figures and payable balances carry them exactly", async () => {
    const productId = await newProduct(h, { holdDays: 0 });
    const aff = await newAffiliate(h, productId);
    const payment = (externalId: string) =>
      track(h, {
        productId,
        type: EventType.PAYMENT,
        referralCode: aff.code,
        amountCents: 100_000_000_000n,
        externalId,
        occurredAt: at(2 * day),
      });
    const first = await payment("max-1");
    await payment("max-2");
    // A whole day inside the window: stats read it from the rollups, as the series does.
    const paidOn = at(2 * day)
      .toISOString()
      .slice(0, 10);
    await h.sql`
      insert into daily_rollups (product_id, day, shard, revenue_cents, commissions_cents)
      values (${productId}, ${paidOn}::date, 15, ${String(beyond)}::int8, ${String(beyond)}::int8)
      on conflict (product_id, day, shard) do update set
        revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents,
        commissions_cents = daily_rollups.commissions_cents + excluded.commissions_cents`;
    await h.sql`
      insert into partnership_rollups (partnership_id, shard, product_id, approved_amount_cents)
      values (${aff.id}, 15, ${productId}, ${String(beyond)}::int8)
      on conflict (partnership_id, shard) do update set
        approved_amount_cents = partnership_rollups.approved_amount_cents + excluded.approved_amount_cents`;
    await h.sql`
      update commissions set original_amount_cents = ${String(beyond)}::int8, amount_cents = ${String(beyond)}::int8
      where id = ${first.event?.commissions[0]?.id ?? ""}`;

    const revenue = 200_000_000_000n + beyond;
    const commissions = 40_000_000_000n + beyond;
    const stats = await h.ledger.getStats({ productId, period: Period.PERIOD_7D });
    expect(stats.current).toMatchObject({ conversions: 2n, revenueCents: revenue, commissionsCents: commissions });
    const series = await h.ledger.getTimeseries({ productId, period: Period.PERIOD_7D });
    expect(series.revenueCents.at(-3)).toBe(revenue);
    expect(series.commissionsCents.at(-3)).toBe(commissions);
    const { stats: figures } = await h.ledger.batchGetPartnershipStats({ productId, partnershipIds: [aff.id] });
    expect(figures[aff.id]).toMatchObject({ earnedCents: commissions, approvedAmountCents: commissions });
    const { balances } = await h.ledger.listPayableBalances({ productId });
    expect(balances).toMatchObject([{ partnershipId: aff.id, amountCents: 20_000_000_000n + beyond }]);
  });
});
