-- Per product and UTC hour, sharded like daily_rollups and changed in the same transactions (every
-- event, every commission change). A stats window's edges are whole hours, so its partial days
-- are summed from these rows instead of from the events (contract 16): a stats answer reads
-- rollups only, whatever the day's traffic. Hours older than the longest reach of a window (two
-- 12-month windows) are never read and are deleted by the hourly compaction, which also folds
-- the shards of hours older than two days into shard 0, as it does for days.
create table hourly_rollups (
  product_id text not null,
  hour timestamptz not null check (extract(epoch from hour) % 3600 = 0),
  shard smallint not null,
  clicks bigint not null default 0,
  signups bigint not null default 0,
  conversions bigint not null default 0,
  revenue_cents bigint not null default 0,
  commissions_cents bigint not null default 0,
  primary key (product_id, hour, shard)
);
-- The compaction's work lists: hours with rows still to fold, and hours past the reach.
create index hourly_rollups_unfolded on hourly_rollups (hour, product_id) where shard <> 0;
create index hourly_rollups_by_hour on hourly_rollups (hour);

-- The hours already recorded (within the reach), from the rows the daily rollups summarise.
with reach (since) as (select ((now() at time zone 'UTC')::date - 731)::timestamp at time zone 'UTC')
insert into hourly_rollups (product_id, hour, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
select product_id, hour, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents)
from (
  select product_id, date_trunc('hour', occurred_at at time zone 'UTC') at time zone 'UTC' as hour,
         count(*) filter (where event_type = 'click') as clicks,
         count(*) filter (where event_type = 'signup') as signups,
         count(*) filter (where event_type = 'payment' and partnership_id is not null) as conversions,
         coalesce(sum(amount_cents) filter (where event_type = 'payment' and partnership_id is not null), 0)
           as revenue_cents,
         0 as commissions_cents
  from tracking_events, reach where occurred_at >= reach.since
  group by 1, 2
  union all
  select product_id, date_trunc('hour', payment_occurred_at at time zone 'UTC') at time zone 'UTC', 0, 0, 0, 0, sum(amount_cents)
  from commissions, reach
  where status <> 'rejected' and payment_occurred_at >= reach.since
  group by 1, 2
) recorded
group by product_id, hour;
