-- The redelivery budget (DESIGN §4): a merchant's redeliveries queued in the
-- last minute are counted from the outbox itself, so every process sharing
-- the database counts the same rows. Partial: it holds the redelivery rows
-- only, never the changes' own, so it stays as small as redeliveries are few.
CREATE INDEX outbox_redeliveries ON outbox (merchant_id, created_at)
    WHERE redelivery_of IS NOT NULL;
