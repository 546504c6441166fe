-- The webhook loop (DESIGN §4): listener signing keys and redelivery.

-- One listener signing key per merchant: it signs the events of
-- `GET /webhooks/listen` (`shipctl listen`). Stable across runs, so a
-- local app keeps its configuration; replaced only on request. Sealed under
-- the data key like the other signing keys.
CREATE TABLE listener_signing_keys (
    merchant_id           INTEGER PRIMARY KEY REFERENCES merchants (id),
    signing_key_encrypted TEXT NOT NULL,
    created_at            TEXT NOT NULL
);

-- A redelivery is an outbox row of its own: it copies the original change's
-- payload and version, goes only to `only_webhook_id`, and names the
-- delivery it repeats. NULL in both for the rows of ordinary changes.
ALTER TABLE outbox ADD COLUMN only_webhook_id INTEGER;
ALTER TABLE outbox ADD COLUMN redelivery_of INTEGER;

-- The delivery log says which attempt a redelivery repeats (NULL for first
-- attempts).
ALTER TABLE webhook_deliveries ADD COLUMN redelivery_of INTEGER;

-- A shipment's delivery history across every target of its merchant.
CREATE INDEX webhook_deliveries_by_shipment
    ON webhook_deliveries (merchant_id, shipment_code, id DESC);

-- "Redeliver every failure since ...": a webhook's failed attempts by time.
-- Partial, so it stays as small as the failures are few.
CREATE INDEX webhook_deliveries_failed
    ON webhook_deliveries (webhook_id, delivered_at) WHERE error IS NOT NULL;
