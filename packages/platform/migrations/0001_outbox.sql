-- Platform tables, created in every service's own schema before the service's migrations.

-- Events waiting to be published. A state change and its event row commit together; the relay
-- publishes rows to JetStream (the id as Nats-Msg-Id, so a re-publish after a crash is
-- deduplicated) and deletes them.
create table outbox (
  id text primary key,
  seq bigint generated always as identity,
  subject text not null,
  payload bytea not null,
  -- Trace context of the transaction that wrote the event, so consumers continue its trace.
  headers jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index outbox_seq on outbox (seq);

-- Wake the relay at once instead of waiting for its next poll.
create function outbox_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '_outbox', '');
  return null;
end $$;
create trigger outbox_notify after insert on outbox
  for each statement execute function outbox_notify();

-- Event ids a durable consumer has applied, written in the same transaction as the effect, so
-- a redelivered event is recognised and applied once.
create table applied_events (
  consumer text not null,
  event_id text not null,
  applied_at timestamptz not null default now(),
  primary key (consumer, event_id)
);
