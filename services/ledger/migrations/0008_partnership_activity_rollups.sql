-- Per partnership, by UTC day and by UTC hour: the affiliate API's stats (contract sections 14
-- and 16) read one partnership's figures of a window from these rows, never from the events.
-- Changed in the same transactions as the product's daily and hourly rollups (every event and
-- commission change attributed to a partnership), sharded like them on the transaction's shard
-- so concurrent events of one busy affiliate do not queue on one row lock; readers sum the
-- shards (at most 16 rows per day or hour). Hours older than a window's reach are deleted by the
-- hourly compaction, as the product's are.
create table partnership_daily_rollups (
  partnership_id text not null,
  day date not null,
  shard smallint not null,
  product_id text not null,
  clicks bigint not null default 0,
  signups bigint not null default 0,
  conversions bigint not null default 0,
  revenue_cents bigint not null default 0,
  commissions_cents bigint not null default 0,
  primary key (partnership_id, day, shard)
);

create table partnership_hourly_rollups (
  partnership_id text not null,
  hour timestamptz not null check (extract(epoch from hour) % 3600 = 0),
  shard smallint not null,
  product_id text not null,
  clicks bigint not null default 0,
  signups bigint not null default 0,
  conversions bigint not null default 0,
  revenue_cents bigint not null default 0,
  commissions_cents bigint not null default 0,
  primary key (partnership_id, hour, shard)
);
-- The compaction's work list: hours past the reach.
create index partnership_hourly_rollups_by_hour on partnership_hourly_rollups (hour);

-- What was recorded before: live events attributed to a partnership, and the commissions each
-- partnership earns (both levels), by the payment's time.
with recorded as (
  select partnership_id, product_id, occurred_at as at,
         (event_type = 'click')::int as clicks, (event_type = 'signup')::int as signups,
         (event_type = 'payment')::int as conversions,
         case when event_type = 'payment' then coalesce(amount_cents, 0) else 0 end as revenue_cents,
         0::bigint as commissions_cents
  from tracking_events where partnership_id is not null
  union all
  select partnership_id, product_id, payment_occurred_at, 0, 0, 0, 0, amount_cents
  from commissions where status <> 'rejected'
)
insert into partnership_daily_rollups (partnership_id, day, shard, product_id, clicks, signups, conversions,
                                       revenue_cents, commissions_cents)
select partnership_id, (at at time zone 'UTC')::date, 0, min(product_id), sum(clicks), sum(signups),
       sum(conversions), sum(revenue_cents), sum(commissions_cents)
from recorded group by partnership_id, (at at time zone 'UTC')::date;

with recorded as (
  select partnership_id, product_id, occurred_at as at,
         (event_type = 'click')::int as clicks, (event_type = 'signup')::int as signups,
         (event_type = 'payment')::int as conversions,
         case when event_type = 'payment' then coalesce(amount_cents, 0) else 0 end as revenue_cents,
         0::bigint as commissions_cents
  from tracking_events where partnership_id is not null
  union all
  select partnership_id, product_id, payment_occurred_at, 0, 0, 0, 0, amount_cents
  from commissions where status <> 'rejected'
),
reach (since) as (select ((now() at time zone 'UTC')::date - 731)::timestamp at time zone 'UTC')
insert into partnership_hourly_rollups (partnership_id, hour, shard, product_id, clicks, signups, conversions,
                                        revenue_cents, commissions_cents)
select partnership_id, date_trunc('hour', at at time zone 'UTC') at time zone 'UTC', 0, min(product_id),
       sum(clicks), sum(signups), sum(conversions), sum(revenue_cents), sum(commissions_cents)
from recorded, reach where at >= reach.since
group by partnership_id, date_trunc('hour', at at time zone 'UTC') at time zone 'UTC';
