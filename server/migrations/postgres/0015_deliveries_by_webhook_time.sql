-- The dashboard's delivery charts: a webhook's attempts over the last days,
-- counted by hour, read as a range of this index (not a walk of the whole
-- log by id, as `webhook_deliveries_by_webhook` would give).
CREATE INDEX webhook_deliveries_by_webhook_time
    ON webhook_deliveries (webhook_id, delivered_at);
