-- Issue 28: no hot rows on the write path. Every event and commission change used to upsert the
-- product's day and hour rows (and its partnership's), and every concurrent writer of one product
-- queued on those row locks (`Lock:transactionid` was the top wait of the batch case). Writers now
-- insert their changes as deltas, one row per transaction and key, with no conflict to take a lock
-- on; a compaction in the ledger (domain/compact-rollups.ts, one replica at a time) moves them into
-- the rollups a batch at a time, and readers sum the rollups and the deltas not yet moved through
-- the views below, in one statement and so one snapshot: answers stay exact.

-- A transaction's activity per product, partnership (null: not attributed) and UTC hour. The
-- product's figures are all its rows; a partnership's, the rows that name it. The day is the
-- hour's, so one row serves the daily and the hourly rollups.
create table activity_deltas (
  product_id text not null,
  partnership_id text,
  hour timestamptz not null check (extract(epoch from hour) % 3600 = 0),
  clicks bigint not null,
  signups bigint not null,
  conversions bigint not null,
  revenue_cents bigint not null,
  commissions_cents bigint not null
);
create index activity_deltas_by_product on activity_deltas (product_id, hour);
create index activity_deltas_by_partnership on activity_deltas (partnership_id, hour) where partnership_id is not null;

-- A transaction's change to one partnership's all-time figures.
create table partnership_deltas (
  partnership_id text not null,
  product_id text not null,
  clicks bigint not null,
  conversions bigint not null,
  pending_count bigint not null,
  pending_amount_cents bigint not null,
  approved_count bigint not null,
  approved_amount_cents bigint not null,
  paid_count bigint not null,
  paid_amount_cents bigint not null
);
create index partnership_deltas_by_partnership on partnership_deltas (partnership_id);

-- Both tables take every write and lose each row within a second: left to the default thresholds
-- (20% of the table), their dead rows would pile up between vacuums and every read of them would
-- step over them. Vacuumed after a fixed number of changes instead, without cost delay.
alter table activity_deltas set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
  autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000, autovacuum_vacuum_cost_delay = 0);
alter table partnership_deltas set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000,
  autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000, autovacuum_vacuum_cost_delay = 0);

-- Writers no longer spread over 16 shards (only the compaction writes the rollups now): each key's
-- rows fold into shard 0. One statement per table: the deleted rows and their sum in one snapshot.
with moved as (delete from daily_rollups where shard <> 0 returning *)
insert into daily_rollups (product_id, day, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
select product_id, day, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents)
from moved group by product_id, day
on conflict (product_id, day, shard) do update set
  clicks = daily_rollups.clicks + excluded.clicks, signups = daily_rollups.signups + excluded.signups,
  conversions = daily_rollups.conversions + excluded.conversions,
  revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents,
  commissions_cents = daily_rollups.commissions_cents + excluded.commissions_cents;

with moved as (delete from hourly_rollups where shard <> 0 returning *)
insert into hourly_rollups (product_id, hour, shard, clicks, signups, conversions, revenue_cents, commissions_cents)
select product_id, hour, 0, sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents)
from moved group by product_id, hour
on conflict (product_id, hour, shard) do update set
  clicks = hourly_rollups.clicks + excluded.clicks, signups = hourly_rollups.signups + excluded.signups,
  conversions = hourly_rollups.conversions + excluded.conversions,
  revenue_cents = hourly_rollups.revenue_cents + excluded.revenue_cents,
  commissions_cents = hourly_rollups.commissions_cents + excluded.commissions_cents;

with moved as (delete from partnership_daily_rollups where shard <> 0 returning *)
insert into partnership_daily_rollups (partnership_id, day, shard, product_id, clicks, signups, conversions,
                                       revenue_cents, commissions_cents)
select partnership_id, day, 0, min(product_id), sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
       sum(commissions_cents)
from moved group by partnership_id, day
on conflict (partnership_id, day, shard) do update set
  clicks = partnership_daily_rollups.clicks + excluded.clicks,
  signups = partnership_daily_rollups.signups + excluded.signups,
  conversions = partnership_daily_rollups.conversions + excluded.conversions,
  revenue_cents = partnership_daily_rollups.revenue_cents + excluded.revenue_cents,
  commissions_cents = partnership_daily_rollups.commissions_cents + excluded.commissions_cents;

with moved as (delete from partnership_hourly_rollups where shard <> 0 returning *)
insert into partnership_hourly_rollups (partnership_id, hour, shard, product_id, clicks, signups, conversions,
                                        revenue_cents, commissions_cents)
select partnership_id, hour, 0, min(product_id), sum(clicks), sum(signups), sum(conversions), sum(revenue_cents),
       sum(commissions_cents)
from moved group by partnership_id, hour
on conflict (partnership_id, hour, shard) do update set
  clicks = partnership_hourly_rollups.clicks + excluded.clicks,
  signups = partnership_hourly_rollups.signups + excluded.signups,
  conversions = partnership_hourly_rollups.conversions + excluded.conversions,
  revenue_cents = partnership_hourly_rollups.revenue_cents + excluded.revenue_cents,
  commissions_cents = partnership_hourly_rollups.commissions_cents + excluded.commissions_cents;

with moved as (delete from partnership_rollups where shard <> 0 returning *)
insert into partnership_rollups (partnership_id, shard, product_id, clicks, conversions, pending_count,
                                 pending_amount_cents, approved_count, approved_amount_cents, paid_count,
                                 paid_amount_cents)
select partnership_id, 0, min(product_id), sum(clicks), sum(conversions), sum(pending_count),
       sum(pending_amount_cents), sum(approved_count), sum(approved_amount_cents), sum(paid_count),
       sum(paid_amount_cents)
from moved group by partnership_id
on conflict (partnership_id, shard) do update set
  clicks = partnership_rollups.clicks + excluded.clicks,
  conversions = partnership_rollups.conversions + excluded.conversions,
  pending_count = partnership_rollups.pending_count + excluded.pending_count,
  pending_amount_cents = partnership_rollups.pending_amount_cents + excluded.pending_amount_cents,
  approved_count = partnership_rollups.approved_count + excluded.approved_count,
  approved_amount_cents = partnership_rollups.approved_amount_cents + excluded.approved_amount_cents,
  paid_count = partnership_rollups.paid_count + excluded.paid_count,
  paid_amount_cents = partnership_rollups.paid_amount_cents + excluded.paid_amount_cents;

-- The shard folds of the hourly compaction are gone with the shards.
drop index daily_rollups_unfolded;
drop index hourly_rollups_unfolded;

-- What every reader of figures reads: the rollups and the deltas not yet folded into them, one
-- row each (readers group and sum). The daily views carry the hour too (a rollup row's is its
-- day's midnight): a reader bounds both, so each side of the union is an index range.
create view daily_figures as
  select product_id, day, day::timestamp at time zone 'UTC' as hour, clicks, signups, conversions, revenue_cents,
         commissions_cents
  from daily_rollups
  union all
  select product_id, (hour at time zone 'UTC')::date, hour, clicks, signups, conversions, revenue_cents,
         commissions_cents
  from activity_deltas;

create view hourly_figures as
  select product_id, hour, clicks, signups, conversions, revenue_cents, commissions_cents from hourly_rollups
  union all
  select product_id, hour, clicks, signups, conversions, revenue_cents, commissions_cents from activity_deltas;

create view partnership_daily_figures as
  select partnership_id, product_id, day, day::timestamp at time zone 'UTC' as hour, clicks, signups, conversions,
         revenue_cents, commissions_cents
  from partnership_daily_rollups
  union all
  select partnership_id, product_id, (hour at time zone 'UTC')::date, hour, clicks, signups, conversions,
         revenue_cents, commissions_cents
  from activity_deltas where partnership_id is not null;

create view partnership_hourly_figures as
  select partnership_id, product_id, hour, clicks, signups, conversions, revenue_cents, commissions_cents
  from partnership_hourly_rollups
  union all
  select partnership_id, product_id, hour, clicks, signups, conversions, revenue_cents, commissions_cents
  from activity_deltas where partnership_id is not null;

create view partnership_figures as
  select partnership_id, product_id, clicks, conversions, pending_count, pending_amount_cents, approved_count,
         approved_amount_cents, paid_count, paid_amount_cents
  from partnership_rollups
  union all
  select partnership_id, product_id, clicks, conversions, pending_count, pending_amount_cents, approved_count,
         approved_amount_cents, paid_count, paid_amount_cents
  from partnership_deltas;
