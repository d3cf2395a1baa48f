-- The integrations schema: each product's connection to its Stripe account (secrets sealed with
-- AES-256-GCM under INTEGRATIONS_ENCRYPTION_KEY, never stored in the clear), and every event
-- Stripe sent or reconciliation fetched, with what applying it led to. The events are the jobs of
-- the apply worker (packages/platform's startJobWorker): an event commits with its first due time,
-- so one stored is one applied, whatever crashes in between.
create table stripe_connections (
  id text primary key,
  product_id text not null unique,
  -- Sealed (nonce, tag, ciphertext).
  webhook_secret bytea not null,
  -- The secret a PUT replaced, verifying until previous_secret_until (24 hours).
  previous_webhook_secret bytea,
  previous_secret_until timestamptz,
  api_key bytea,
  connected_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((previous_webhook_secret is null) = (previous_secret_until is null))
);

create table stripe_events (
  -- Ours ("sev_" + UUIDv7): orders the list by receipt; Stripe's id is event_id.
  id text primary key,
  product_id text not null,
  connection_id text not null,
  event_id text not null,
  type text not null,
  livemode boolean not null,
  -- Stripe's `created` of the event.
  created_at timestamptz not null,
  received_at timestamptz not null default now(),
  -- The event as Stripe sent it; erasure replaces the customer's email in it.
  payload jsonb not null,
  outcome text not null check (outcome in ('applied', 'ignored', 'waiting', 'failed')),
  detail text not null,
  tracking_event_id text,
  commission_ids text[] not null default '{}',
  -- A refund's or dispute's payment, while it waits for it: a payment applied wakes its waiters.
  awaits_payment text[],
  -- Events of one customer are applied one at a time, in the order received (its signup before
  -- its payment); an event without a customer is its own group.
  apply_group text not null,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  leased_until timestamptz,
  lease_token text,
  unique (product_id, event_id)
);
create index stripe_events_list on stripe_events (product_id, id desc);
create index stripe_events_by_outcome on stripe_events (product_id, outcome, id desc);
create index stripe_events_due on stripe_events (next_attempt_at) where next_attempt_at is not null;
create index stripe_events_leased_groups on stripe_events (apply_group) where leased_until is not null;
create index stripe_events_awaiting on stripe_events using gin (awaits_payment) where outcome = 'waiting';
create trigger stripe_events_due after insert or update of next_attempt_at on stripe_events
  for each row when (new.next_attempt_at is not null) execute function job_notify();

-- Customers whose referral was recorded as a signup: a customer.updated, or the session of a
-- subscription, repeating the referral records nothing more.
create table stripe_customers (
  product_id text not null,
  customer_id text not null,
  signup_event_id text not null,
  recorded_at timestamptz not null default now(),
  primary key (product_id, customer_id)
);

-- What a payment was recorded as, for the refunds and disputes that name it otherwise: an
-- invoice's payment intents (a charge of API versions after 2025-03 names no invoice).
create table stripe_payments (
  product_id text not null,
  payment_intent_id text not null,
  external_id text not null,
  primary key (product_id, payment_intent_id)
);
