-- Durable jobs (src/job-worker.ts): a service's job table wakes its workers on
-- `<schema>_<table>` when a statement makes jobs due, with
--   create trigger <table>_due after insert or update of next_attempt_at on <table>
--     for each statement execute function job_notify();
create function job_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '_' || tg_table_name, '');
  return null;
end $$;
