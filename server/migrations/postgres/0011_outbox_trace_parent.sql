-- The W3C `traceparent` of the request that wrote the change (issue 31),
-- when the server exports its spans: the webhook delivery continues that
-- trace. NULL otherwise, and for rows written before.
ALTER TABLE outbox ADD COLUMN trace_parent TEXT;
