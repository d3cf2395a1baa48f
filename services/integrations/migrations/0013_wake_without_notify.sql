-- Issue 28: received Stripe events no longer send a NOTIFY (Postgres serialises the commits of
-- notifying transactions). The receiver wakes the apply worker in-process after the commit
-- (wakeAfterCommit, packages/platform/src/wakeups.ts); the worker polls every second and still
-- LISTENs on `integrations_stripe_events`.
drop trigger stripe_events_due on stripe_events;
