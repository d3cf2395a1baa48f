-- Webhook endpoints, their deliveries (stored payloads and attempts), and affiliate emails.

create table endpoints (
  id text primary key,
  product_id text not null,
  url text not null,
  -- Public event types it receives; empty means every type.
  events text[] not null default '{}',
  -- Kept as the service needs them to sign (HMAC keys cannot be hashed); never returned after
  -- creation or rotation. The previous secret also signs until previous_secret_until.
  secret text not null,
  previous_secret text,
  previous_secret_until timestamptz,
  enabled boolean not null default true,
  disabled_reason text check (disabled_reason in ('merchant', 'failing', 'gone')),
  disabled_at timestamptz,
  -- The first failure since the last success: 5 days of it disable the endpoint.
  failing_since timestamptz,
  -- When a `failing` endpoint is probed next (hourly for a day, then daily).
  next_probe_at timestamptz,
  created_at timestamptz not null default now(),
  check (enabled = (disabled_reason is null))
);
create index endpoints_by_product on endpoints (product_id, id desc);
create index endpoints_to_probe on endpoints (next_probe_at) where next_probe_at is not null;

-- One event for one endpoint. A durable job (platform job worker): due when next_attempt_at
-- <= now, leased by one worker at a time.
create table deliveries (
  id text primary key,
  product_id text not null,
  endpoint_id text not null references endpoints (id) on delete cascade,
  -- The public event id: the body's `id` and the webhook-id header of every attempt.
  event_id text not null,
  event_type text not null,
  -- The body, `{ id, type, created_at, data }`, exactly as sent.
  payload jsonb not null,
  -- Trace context of the API call that caused the event: every attempt carries it.
  trace_headers jsonb not null default '{}',
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  last_status_code integer,
  next_attempt_at timestamptz,
  leased_until timestamptz,
  lease_token text,
  created_at timestamptz not null default now(),
  unique (endpoint_id, event_id)
);
create index deliveries_due on deliveries (next_attempt_at) where next_attempt_at is not null;
create index deliveries_leased on deliveries (leased_until) where leased_until is not null;
create index deliveries_by_endpoint on deliveries (endpoint_id, id desc);
create index deliveries_by_age on deliveries (created_at);
create index deliveries_by_customer on deliveries (product_id, (payload -> 'data' ->> 'customer_email'))
  where payload -> 'data' ->> 'customer_email' is not null;
create trigger deliveries_due after insert or update of next_attempt_at on deliveries
  for each statement execute function job_notify();

create table delivery_attempts (
  delivery_id text not null references deliveries (id) on delete cascade,
  attempted_at timestamptz not null,
  status_code integer,
  duration_ms integer not null,
  error text not null default ''
);
create index delivery_attempts_by_delivery on delivery_attempts (delivery_id, attempted_at);

-- Emails to affiliates: exactly one per (event, template, recipient), whatever the redeliveries.
-- Sent by the same job worker; without SMTP_URL they are recorded here and logged by id only.
create table emails (
  id text primary key,
  product_id text not null,
  event_id text not null,
  template text not null,
  recipient text not null,
  subject text not null,
  text_body text not null,
  html_body text not null,
  status text not null default 'pending' check (status in ('pending', 'sent', 'recorded', 'failed')),
  attempts integer not null default 0,
  last_error text,
  next_attempt_at timestamptz,
  leased_until timestamptz,
  lease_token text,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  unique (event_id, template, recipient)
);
create index emails_due on emails (next_attempt_at) where next_attempt_at is not null;
create index emails_leased on emails (leased_until) where leased_until is not null;
create index emails_by_age on emails (created_at);
create trigger emails_due after insert or update of next_attempt_at on emails
  for each statement execute function job_notify();
