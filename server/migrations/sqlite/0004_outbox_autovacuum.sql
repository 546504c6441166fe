-- PostgreSQL tunes autovacuum for the outbox in this migration; SQLite has
-- no autovacuum settings per table. Kept so both schemas share versions.
SELECT 1;
