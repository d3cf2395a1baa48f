-- Refunds of live payments, and the idempotency records of the refund endpoint.

-- The payment's cumulative refunded total. It only grows, never beyond the payment: the check is
-- the database's own guarantee of "no payment refunded beyond its amount".
alter table tracking_events add column refunded_cents bigint not null default 0;
alter table tracking_events add constraint tracking_events_refunds_within_payment
  check (refunded_cents >= 0 and refunded_cents <= coalesce(amount_cents, 0));

-- Finding a payment by customer email and exact amount, newest first.
create index tracking_events_payments_by_email on tracking_events (product_id, customer_email, amount_cents, occurred_at desc)
  where event_type = 'payment';

create table refunds (
  id text primary key,
  product_id text not null,
  event_id text not null references tracking_events (id),
  commission_id text not null references commissions (id),
  amount_cents bigint not null check (amount_cents > 0),
  reason text check (char_length(reason) <= 500),
  idempotency_key text,
  created_at timestamptz not null default now()
);
create index refunds_by_event on refunds (event_id);

-- One row per (product, key). A request first commits an in_progress row (so a concurrent
-- repeat sees it and answers 409), then applies the refund and stores its outcome in one
-- transaction. An in_progress row whose lease ran out belongs to a request that died before its
-- refund committed (the two commit together), so it may be taken over. Only a hash of the
-- request body is kept: no customer email is stored here.
create table idempotency_keys (
  product_id text not null,
  key text not null,
  request_fingerprint text not null,
  state text not null check (state in ('in_progress', 'completed')),
  -- { "result": {…} } or { "error": { kind, message, reason, details } }
  outcome jsonb,
  locked_until timestamptz not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (product_id, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);
