-- The ledger schema: tracking events, commissions at both levels, and the rollups that make
-- stats cost O(days) instead of O(events).

-- Live tracking events. Sandbox (sk_test_) events live in sandbox_events, so no live query can
-- ever count them.
create table tracking_events (
  id text primary key,
  product_id text not null,
  event_type text not null check (event_type in ('click', 'signup', 'payment')),
  -- The referring partnership; null when unattributed.
  partnership_id text,
  visitor_id text,
  customer_email text,
  provider_customer_id text,
  amount_cents bigint check (amount_cents > 0),
  external_id text,
  ip text,
  user_agent text,
  occurred_at timestamptz not null,
  created_at timestamptz not null default now(),
  anonymized_at timestamptz,
  -- Audit metadata (erasure replaces customer emails in it).
  metadata jsonb not null default '{}'
);
-- A payment's external_id is unique per product: the second report of a payment is a replay.
create unique index tracking_events_external_id on tracking_events (product_id, external_id)
  where external_id is not null;
-- Attribution lookups: a customer's latest signup, a visitor's latest click.
create index tracking_events_signups_by_customer_id on tracking_events (product_id, provider_customer_id, occurred_at desc)
  where event_type = 'signup' and provider_customer_id is not null;
create index tracking_events_signups_by_email on tracking_events (product_id, customer_email, occurred_at desc)
  where event_type = 'signup' and customer_email is not null;
create index tracking_events_clicks_by_visitor on tracking_events (product_id, visitor_id, occurred_at desc)
  where event_type = 'click';
-- The partial days at the edges of a stats window are summed from events.
create index tracking_events_by_time on tracking_events (product_id, occurred_at);

create table sandbox_events (like tracking_events including defaults including constraints);
alter table sandbox_events add primary key (id);
-- What a sandbox payment would have earned, returned again on a replay.
alter table sandbox_events add column simulated_commissions jsonb not null default '[]';
create unique index sandbox_events_external_id on sandbox_events (product_id, external_id)
  where external_id is not null;
create index sandbox_events_signups_by_customer_id on sandbox_events (product_id, provider_customer_id, occurred_at desc)
  where event_type = 'signup' and provider_customer_id is not null;
create index sandbox_events_signups_by_email on sandbox_events (product_id, customer_email, occurred_at desc)
  where event_type = 'signup' and customer_email is not null;
create index sandbox_events_clicks_by_visitor on sandbox_events (product_id, visitor_id, occurred_at desc)
  where event_type = 'click';

create table commissions (
  id text primary key,
  product_id text not null,
  partnership_id text not null,
  event_id text not null references tracking_events (id),
  level smallint not null check (level in (1, 2)),
  parent_commission_id text references commissions (id),
  -- What the payment earned at creation; refunds recompute amount_cents from it.
  original_amount_cents bigint not null check (original_amount_cents >= 0),
  amount_cents bigint not null check (amount_cents >= 0 and amount_cents <= original_amount_cents),
  status text not null check (status in ('pending', 'approved', 'paid', 'rejected', 'refunded')),
  hold_until timestamptz not null,
  referral_code text not null,
  payment_amount_cents bigint not null check (payment_amount_cents > 0),
  -- The payment's occurred_at: the day whose rollup holds this commission's amount.
  payment_occurred_at timestamptz not null,
  payout_id text,
  reason text check (char_length(reason) <= 500),
  created_at timestamptz not null default now(),
  approved_at timestamptz,
  updated_at timestamptz not null default now(),
  check ((level = 2) = (parent_commission_id is not null))
);
create index commissions_newest_first on commissions (product_id, id desc);
create index commissions_by_partnership on commissions (product_id, partnership_id, id desc);
create index commissions_by_payout on commissions (payout_id) where payout_id is not null;
create index commissions_by_event on commissions (event_id);
create index commissions_children on commissions (parent_commission_id) where parent_commission_id is not null;
-- The hold sweep's work list.
create index commissions_due on commissions (hold_until) where status = 'pending';

-- Per product and UTC day. Each event adds to one of 16 shards picked at random, so concurrent
-- events of one product do not queue on one row lock; readers sum the shards.
create table daily_rollups (
  product_id text not null,
  day date not null,
  shard smallint not null,
  clicks bigint not null default 0,
  signups bigint not null default 0,
  conversions bigint not null default 0,
  revenue_cents bigint not null default 0,
  commissions_cents bigint not null default 0,
  primary key (product_id, day, shard)
);

-- Per partnership, all time, sharded like daily_rollups.
create table partnership_rollups (
  partnership_id text not null,
  shard smallint not null,
  product_id text not null,
  clicks bigint not null default 0,
  conversions bigint not null default 0,
  pending_count bigint not null default 0,
  pending_amount_cents bigint not null default 0,
  approved_count bigint not null default 0,
  approved_amount_cents bigint not null default 0,
  paid_count bigint not null default 0,
  paid_amount_cents bigint not null default 0,
  primary key (partnership_id, shard)
);

-- Commissions of the payments in a stats window's partial edge days.
create index commissions_by_payment_time on commissions (product_id, payment_occurred_at);
