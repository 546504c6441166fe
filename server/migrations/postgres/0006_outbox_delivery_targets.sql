-- What a change's delivery needs, captured when its outbox row is written, so
-- the dispatcher does not read the shipment back for every row: the
-- shipment's own webhook_url at that change, and whose shipment signing key
-- (shipment_signing_keys.merchant_id) signs the delivery to it. The key is
-- referenced, not copied, so a rotation before the delivery leaves applies.
-- Every row written from now on names its key, with or without a URL; NULL
-- marks a row written before this migration, whose URL the claim reads from
-- the shipment as it always did.
ALTER TABLE outbox ADD COLUMN webhook_url TEXT;
ALTER TABLE outbox ADD COLUMN signing_key_merchant_id BIGINT;
