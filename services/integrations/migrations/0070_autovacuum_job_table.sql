-- Autovacuum settings of the Stripe events job table (issue 28 item 4): each event is updated
-- as it is claimed, applied or retried, and the table keeps every event received, so it is
-- vacuumed after 1% of it is dead (at least every 1000 dead rows) rather than the default 20%.
alter table stripe_events set (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
