-- Autovacuum settings of the platform's hot tables, in every service's schema (issue 28 item 4).
-- Each event written is an outbox row inserted and, once published, deleted; each event applied
-- is an applied_events row, purged by age. Without vacuum their dead rows are never reclaimed:
-- the tables and their indexes grow with every event ever written, the relay's scan of a table
-- of a few live rows reads ever more dead ones, and commits slow (the soak of issue 28 failed
-- with autovacuum off and held with it on).
--
-- The default (vacuum once 50 rows and 20% of the table are dead, throttled) scales with the
-- table's last counted size. The outbox's size swings (empty while the relay keeps up, many
-- thousands of rows behind a burst): a fixed 1000 dead rows keeps it vacuumed whatever size it
-- was last seen at, unthrottled since its live part is small. applied_events only grows and is
-- purged in bulk by age: 5% of it.
alter table outbox set (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0,
  autovacuum_analyze_threshold = 1000
);
alter table applied_events set (
  autovacuum_vacuum_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.05
);
