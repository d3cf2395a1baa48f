-- The notifier keeps in memory which products have endpoints for which event types, so an event
-- nobody listens to is acked without a query (src/events/listeners.ts). Each replica follows the
-- changes that alter that answer on `<schema>_endpoints`, with the product as payload: an
-- endpoint made or deleted, or its event types changed. Enabling and disabling do not alter it
-- (a disabled endpoint still gets its deliveries, failed, for `recover`), nor do the attempts'
-- marks, so attempts send no NOTIFY (each would take Postgres's global notify lock at commit).
create function endpoints_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '_endpoints', coalesce(new.product_id, old.product_id));
  return null;
end $$;
create trigger endpoints_made_or_deleted after insert or delete on endpoints
  for each row execute function endpoints_notify();
-- An endpoint's product never changes.
create trigger endpoints_events_changed after update of events on endpoints
  for each row when (old.events is distinct from new.events) execute function endpoints_notify();
