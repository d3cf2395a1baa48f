-- Fraud and review (issue 30, contract section 18).

-- A commission a fraud signal flagged is held for the merchant's review (hold_reason 'review'):
-- like a dispute's hold, the sweep never approves it and no payout claims it (the partial indexes
-- commissions_due and commissions_payable already leave every held commission out). `flags` are
-- the signals raised when it was created, each with its evidence: [{ "signal", "evidence" }].
-- The review is kept beside it: the decision, the merchant's note, the (masked) key that made it
-- and when.
alter table commissions drop constraint commissions_hold_reason_check;
alter table commissions add constraint commissions_hold_reason_check check (hold_reason in ('dispute', 'review'));
alter table commissions
  add column flags jsonb check (flags is null or jsonb_typeof(flags) = 'array'),
  add column review_decision text check (review_decision in ('approve', 'reject')),
  add column review_note text,
  add column review_key text,
  add column reviewed_at timestamptz,
  add constraint commissions_review_complete
    check ((review_decision is null) = (reviewed_at is null) and (review_decision is null) = (review_key is null));

-- The review queue: a product's commissions awaiting review, newest first.
create index commissions_awaiting_review on commissions (product_id, id desc) where hold_reason = 'review';

-- refund_rate reads a partnership's level-1 commissions of the last 30 days by payment time.
create index commissions_level1_by_partnership_time on commissions (product_id, partnership_id, payment_occurred_at)
  where level = 1;

-- A click the fraud checks flagged (duplicate_click, bot) is stored with its flags, and counted
-- nowhere (not in the rollups, not as the earlier click a later duplicate is measured against).
-- `ip_hash` is a keyed hash of the click's address (never the address), given by the gateway's
-- referral links (added here unless their branch added it first); a duplicate is the same
-- visitor or the same address hash within the hour.
alter table tracking_events
  add column flags jsonb check (flags is null or jsonb_typeof(flags) = 'array'),
  add column if not exists ip_hash text;
create index tracking_events_counted_clicks_by_ip_hash on tracking_events (product_id, ip_hash, occurred_at desc)
  where event_type = 'click' and ip_hash is not null and flags is null;
