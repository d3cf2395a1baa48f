-- Issue 28: the outbox no longer sends a NOTIFY on insert. Postgres commits the transactions
-- that notified one at a time, under one lock held through the WAL flush, so every outbox write
-- of every service queued on it. The relay is now woken in-process after the commit of a
-- transaction that wrote the outbox (src/wakeups.ts), polls every second for what other
-- replicas wrote, and still LISTENs on `<schema>_outbox` for a NOTIFY sent by hand.
drop trigger outbox_notify on outbox;
drop function outbox_notify();
