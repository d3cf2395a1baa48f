-- The periodic purge of applied event ids older than the streams' retention finds them by age.
create index applied_events_by_age on applied_events (applied_at);
