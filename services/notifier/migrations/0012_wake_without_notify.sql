-- Issue 28: deliveries and emails made due no longer send a NOTIFY (Postgres serialises the
-- commits of notifying transactions). The notifier's writers wake its workers in-process after
-- the commit (wakeAfterCommit, packages/platform/src/wakeups.ts); the workers poll every second
-- and still LISTEN, so a NOTIFY on `notifier_deliveries` or `notifier_emails` by hand still wakes them.
drop trigger deliveries_due on deliveries;
drop trigger emails_due on emails;
