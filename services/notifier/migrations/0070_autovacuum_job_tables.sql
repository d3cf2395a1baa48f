-- Autovacuum settings of the notifier's job tables (issue 28 item 4). Every delivery and every
-- email is updated several times in its life (claimed with a lease, attempted, finished), each
-- update leaving a dead row version behind; the workers' claims scan the due and leased
-- indexes, which carry those dead versions until vacuum removes them. The tables keep their
-- history and grow, so the default (vacuum once 20% is dead) would wait longer and longer
-- between vacuums: 1% of the table, and at least every 1000 dead rows.
alter table deliveries set (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
alter table emails set (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
