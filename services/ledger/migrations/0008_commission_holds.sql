-- Holds: a payment's commissions set aside while its payment is disputed (issue 20, contract
-- section 13). A held commission keeps its status and amount, but the hold sweep does not approve
-- it and no payout claims it, until its hold is released (the dispute won) or the payment is
-- refunded in full (the dispute lost).

-- Why the commission is held; null when it is not. Set only on a commission in no payout: one
-- already claimed stays in its payout (a lost dispute then claws it back), never both.
alter table commissions add column hold_reason text check (hold_reason in ('dispute'));

-- One row per hold a payment provider names (its dispute id), whatever order its opening and its
-- closing arrive in: the row makes both idempotent by that id. A closing that arrives first
-- records the hold closed, so the opening that follows holds nothing.
create table commission_holds (
  product_id text not null,
  hold_id text not null check (char_length(hold_id) between 1 and 128),
  event_id text not null references tracking_events (id),
  reason text not null check (reason in ('dispute')),
  -- held: open. released: lifted, nothing refunded (a dispute won). refunded: the payment was
  -- refunded in full when it closed (a dispute lost).
  state text not null check (state in ('held', 'released', 'refunded')),
  created_at timestamptz not null default now(),
  closed_at timestamptz,
  primary key (product_id, hold_id)
);
-- The open holds of a payment: a release lifts a commission's hold only when none is left, and
-- a commission unlinked from a rejected payout is held again while one is.
create index commission_holds_open_by_event on commission_holds (event_id) where state = 'held';

-- The sweep's work list and the payable commissions leave held ones out of the index itself:
-- a held commission past its hold_until is never read by a sweep, however long its dispute lasts.
drop index commissions_due;
create index commissions_due on commissions (hold_until) where status = 'pending' and hold_reason is null;
drop index commissions_payable;
create index commissions_payable on commissions (product_id, partnership_id, id) include (amount_cents)
  where status = 'approved' and payout_id is null and hold_reason is null;
