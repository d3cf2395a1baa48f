import type { Queryable } from "@affiliate/platform";
import { windowReachDays } from "../domain/stats.js";

/**
 * Every row that breaks one of the ledger's invariants, named by the check it fails: the queries
 * of the README, and the figures (rollups with their unfolded deltas, migration 0010) equal to the
 * events and commissions they summarise (activity
 * per product-day, per product-hour within a window's reach, per partnership-day and -hour, figures
 * per partnership). With
 * both, the hourly rows of a day also add up to its daily rows. Empty on a healthy database. Tests and the bench
 * run it after their writes; an operator can run the same queries from the README by hand.
 */
export async function invariantViolations(sql: Queryable): Promise<{ check: string; row: unknown }[]> {
  const checks: Record<string, PromiseLike<readonly unknown[]>> = {
    "commission below 0": sql`select id from commissions where amount_cents < 0`,
    "commission both held and in a payout": sql`
      select id from commissions where hold_reason is not null and payout_id is not null`,
    "commission held without an open hold of its payment": sql`
      select c.id from commissions c
      where c.hold_reason = 'dispute'
        and not exists (select 1 from commission_holds h where h.event_id = c.event_id and h.state = 'held')`,
    "payment refunded beyond its amount": sql`
      select id from tracking_events where refunded_cents > coalesce(amount_cents, 0)`,
    "refunded total is not the sum of refunds": sql`
      select e.id from tracking_events e
      left join (select event_id, sum(amount_cents) as total from refunds group by event_id) r on r.event_id = e.id
      where e.refunded_cents <> coalesce(r.total, 0)`,
    "commission not recomputed from the refunded total": sql`
      select c.id from commissions c join tracking_events e on e.id = c.event_id
      where c.status <> 'rejected'
        and c.amount_cents <> floor((2 * c.original_amount_cents * (e.amount_cents - e.refunded_cents) + e.amount_cents)
                                    / (2 * e.amount_cents))`,
    "daily commissions differ from the commissions": sql`
      select r.product_id, r.day from
        (select product_id, day, sum(commissions_cents) as total from daily_figures group by 1, 2) r
        left join (select product_id, (payment_occurred_at at time zone 'UTC')::date as day, sum(amount_cents) as total
                   from commissions where status <> 'rejected' group by 1, 2) c using (product_id, day)
      where r.total <> coalesce(c.total, 0)`,
    "daily activity differs from the events": sql`
      select product_id, day from
        (select product_id, day, sum(clicks) as clicks, sum(signups) as signups, sum(conversions) as conversions,
                sum(revenue_cents) as revenue from daily_figures group by 1, 2) r
        full join (select product_id, (occurred_at at time zone 'UTC')::date as day,
                          count(*) filter (where event_type = 'click' and flags is null) as clicks,
                          count(*) filter (where event_type = 'signup') as signups,
                          count(*) filter (where event_type = 'payment' and partnership_id is not null) as conversions,
                          coalesce(sum(amount_cents) filter (where event_type = 'payment' and partnership_id is not null), 0)
                            as revenue
                   from tracking_events group by 1, 2) e using (product_id, day)
      where (coalesce(r.clicks, 0), coalesce(r.signups, 0), coalesce(r.conversions, 0), coalesce(r.revenue, 0))
            <> (coalesce(e.clicks, 0), coalesce(e.signups, 0), coalesce(e.conversions, 0), coalesce(e.revenue, 0))`,
    "hourly commissions differ from the commissions": sql`
      with reach (since) as (select ((now() at time zone 'UTC')::date - ${windowReachDays}::int)::timestamp at time zone 'UTC')
      select product_id, hour from
        (select product_id, hour, sum(commissions_cents) as total from hourly_figures, reach
         where hour >= reach.since group by 1, 2) r
        full join (select product_id, date_trunc('hour', payment_occurred_at at time zone 'UTC') at time zone 'UTC' as hour,
                          sum(amount_cents) as total
                   from commissions, reach where status <> 'rejected' and payment_occurred_at >= reach.since
                   group by 1, 2) c using (product_id, hour)
      where coalesce(r.total, 0) <> coalesce(c.total, 0)`,
    "hourly activity differs from the events": sql`
      with reach (since) as (select ((now() at time zone 'UTC')::date - ${windowReachDays}::int)::timestamp at time zone 'UTC')
      select product_id, hour from
        (select product_id, hour, sum(clicks) as clicks, sum(signups) as signups, sum(conversions) as conversions,
                sum(revenue_cents) as revenue from hourly_figures, reach where hour >= reach.since group by 1, 2) r
        full join (select product_id, date_trunc('hour', occurred_at at time zone 'UTC') at time zone 'UTC' as hour,
                          count(*) filter (where event_type = 'click' and flags is null) as clicks,
                          count(*) filter (where event_type = 'signup') as signups,
                          count(*) filter (where event_type = 'payment' and partnership_id is not null) as conversions,
                          coalesce(sum(amount_cents) filter (where event_type = 'payment' and partnership_id is not null), 0)
                            as revenue
                   from tracking_events, reach where occurred_at >= reach.since group by 1, 2) e using (product_id, hour)
      where (coalesce(r.clicks, 0), coalesce(r.signups, 0), coalesce(r.conversions, 0), coalesce(r.revenue, 0))
            <> (coalesce(e.clicks, 0), coalesce(e.signups, 0), coalesce(e.conversions, 0), coalesce(e.revenue, 0))`,
    "partnership daily or hourly activity differs from the events and commissions": sql`
      with reach (since) as (select ((now() at time zone 'UTC')::date - ${windowReachDays}::int)::timestamp at time zone 'UTC'),
      recorded as (
        select partnership_id, occurred_at as at, (event_type = 'click' and flags is null)::int as clicks,
               (event_type = 'signup')::int as signups, (event_type = 'payment')::int as conversions,
               case when event_type = 'payment' then amount_cents else 0 end as revenue, 0::int8 as commissions
        from tracking_events where partnership_id is not null
        union all
        select partnership_id, payment_occurred_at, 0, 0, 0, 0, amount_cents from commissions where status <> 'rejected'
      ),
      expected as (
        select partnership_id, 'day' as period, date_trunc('day', at at time zone 'UTC') at time zone 'UTC' as start,
               sum(clicks) as clicks, sum(signups) as signups, sum(conversions) as conversions,
               sum(revenue) as revenue, sum(commissions) as commissions
        from recorded group by 1, 2, 3
        union all
        select partnership_id, 'hour', date_trunc('hour', at at time zone 'UTC') at time zone 'UTC', sum(clicks),
               sum(signups), sum(conversions), sum(revenue), sum(commissions)
        from recorded, reach where at >= reach.since group by 1, 2, 3
      ),
      rolled as (
        select partnership_id, 'day' as period, day::timestamp at time zone 'UTC' as start, sum(clicks) as clicks,
               sum(signups) as signups, sum(conversions) as conversions, sum(revenue_cents) as revenue,
               sum(commissions_cents) as commissions
        from partnership_daily_figures group by 1, 2, 3
        union all
        select partnership_id, 'hour', hour, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
               sum(commissions_cents)
        from partnership_hourly_figures, reach where hour >= reach.since group by 1, 2, 3
      )
      select partnership_id, period, start from rolled r full join expected e using (partnership_id, period, start)
      where (coalesce(r.clicks, 0), coalesce(r.signups, 0), coalesce(r.conversions, 0), coalesce(r.revenue, 0),
             coalesce(r.commissions, 0))
            <> (coalesce(e.clicks, 0), coalesce(e.signups, 0), coalesce(e.conversions, 0), coalesce(e.revenue, 0),
                coalesce(e.commissions, 0))`,
    "partnership figures differ from the events and commissions": sql`
      select partnership_id from
        (select partnership_id, sum(clicks) as clicks, sum(conversions) as conversions,
                sum(pending_count) as pending_count, sum(pending_amount_cents) as pending,
                sum(approved_count) as approved_count, sum(approved_amount_cents) as approved
         from partnership_figures group by 1) r
        full join (select partnership_id, count(*) filter (where event_type = 'click' and flags is null) as clicks,
                          count(*) filter (where event_type = 'payment') as conversions
                   from tracking_events where partnership_id is not null group by 1) e using (partnership_id)
        full join (select partnership_id, count(*) filter (where status = 'pending') as pending_count,
                          coalesce(sum(amount_cents) filter (where status = 'pending'), 0) as pending,
                          count(*) filter (where status = 'approved') as approved_count,
                          coalesce(sum(amount_cents) filter (where status = 'approved'), 0) as approved
                   from commissions group by 1) c using (partnership_id)
      where (coalesce(r.clicks, 0), coalesce(r.conversions, 0)) <> (coalesce(e.clicks, 0), coalesce(e.conversions, 0))
         or (coalesce(r.pending_count, 0), coalesce(r.pending, 0), coalesce(r.approved_count, 0), coalesce(r.approved, 0))
            <> (coalesce(c.pending_count, 0), coalesce(c.pending, 0), coalesce(c.approved_count, 0), coalesce(c.approved, 0))`,
  };
  const found = await Promise.all(
    Object.entries(checks).map(async ([check, rows]) => (await rows).map((row) => ({ check, row }))),
  );
  return found.flat();
}
