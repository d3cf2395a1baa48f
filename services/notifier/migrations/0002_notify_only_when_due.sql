-- Wake the job workers only when a row becomes due. Finishing a delivery or an email sets
-- next_attempt_at to null, and notifying then announced nothing while costing the most: Postgres
-- serialises the commits of every transaction that sent a NOTIFY (one global lock, held through
-- the WAL flush), so every finished attempt queued behind every other and the deliveries per
-- second were capped by single commits. pg_notify folds a transaction's identical notifications
-- into one, so a row trigger still sends one however many rows a transaction makes due.
drop trigger deliveries_due on deliveries;
create trigger deliveries_due after insert or update of next_attempt_at on deliveries
  for each row when (new.next_attempt_at is not null) execute function job_notify();

drop trigger emails_due on emails;
create trigger emails_due after insert or update of next_attempt_at on emails
  for each row when (new.next_attempt_at is not null) execute function job_notify();
