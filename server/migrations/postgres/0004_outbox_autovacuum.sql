-- The outbox is a queue: every row is inserted, updated twice and then only
-- kept for the delivery log. Vacuum and analyze it after a small share of
-- changes instead of the default 20% / 10%, so dead rows and stale
-- statistics do not pile up during a burst.
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
