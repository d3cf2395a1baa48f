-- The payouts schema: payouts, the commissions each one links, and the negative adjustments
-- that claw back refunds of commissions already paid out.

-- A payout bundles one partnership's approved commissions and unapplied adjustments.
-- 'draft' is internal: the row exists between reserving the payout id and linking what the
-- ledger claimed for it; no RPC ever returns a draft.
create table payouts (
  id text primary key,
  product_id text not null,
  partnership_id text not null,
  status text not null
    check (status in ('draft', 'pending', 'approved', 'failed', 'processing', 'completed')),
  -- Net: linked commissions' current amounts plus linked adjustments. May drop below 0 when a
  -- clawback lands on an open payout; generation never creates one that is not above 0.
  amount_cents bigint not null default 0,
  adjustment_cents bigint not null default 0 check (adjustment_cents <= 0),
  commission_count bigint not null default 0 check (commission_count >= 0),
  created_at timestamptz not null default now(),
  approved_at timestamptz,
  paid_at timestamptz,
  gateway_transfer_id text check (char_length(gateway_transfer_id) <= 500),
  failure_reason text check (char_length(failure_reason) <= 500),
  updated_at timestamptz not null default now()
);
-- Lists: newest first, optionally by status or partnership.
create index payouts_newest_first on payouts (product_id, id desc);
create index payouts_by_status on payouts (product_id, status, id desc);
create index payouts_by_partnership on payouts (product_id, partnership_id, id desc);
-- Draft recovery's work list.
create index payouts_drafts on payouts (created_at) where status = 'draft';
-- A clawback looks for the partnership's newest open payout.
create index payouts_open_by_partnership on payouts (partnership_id, id desc)
  where status in ('pending', 'approved', 'failed');

-- The commissions a payout holds, at their current amount. A commission is in one payout at
-- most. payment_refunded_cents_seen is the payment's refunded total of the newest refund event
-- applied, so an older event that arrives late changes nothing.
create table payout_commissions (
  commission_id text primary key,
  payout_id text not null references payouts (id) on delete cascade,
  amount_cents bigint not null check (amount_cents >= 0),
  payment_refunded_cents_seen bigint not null default 0 check (payment_refunded_cents_seen >= 0)
);
create index payout_commissions_by_payout on payout_commissions (payout_id);

-- Negative adjustments: what a refund took back from a commission whose money already went
-- out. payout_id null means unapplied: the partnership's next payout nets it.
create table adjustments (
  id text primary key,
  product_id text not null,
  partnership_id text not null,
  commission_id text not null,
  amount_cents bigint not null check (amount_cents < 0),
  payout_id text references payouts (id),
  -- The CommissionRefunded event that caused it: a redelivery creates nothing.
  source_event_id text not null unique,
  created_at timestamptz not null default now()
);
create index adjustments_unapplied on adjustments (product_id, partnership_id) where payout_id is null;
create index adjustments_by_payout on adjustments (payout_id) where payout_id is not null;

-- Payout ids whose commissions the ledger must release: a draft abandoned after its claim.
-- Written in the transaction that deletes the draft, removed once the ledger confirmed, so a
-- crash in between only delays the release.
create table pending_releases (
  payout_id text primary key,
  product_id text not null,
  created_at timestamptz not null default now()
);

-- When the scheduled generation last ran. Replicas claim a run with a conditional update, so
-- one of them runs it per interval, and a restart does not reset the clock.
create table schedule_runs (
  name text primary key,
  last_run_at timestamptz not null
);
insert into schedule_runs (name, last_run_at) values ('generate_payouts', now());
