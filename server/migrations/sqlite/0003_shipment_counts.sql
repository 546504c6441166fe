-- Shipments per merchant and status, kept in the same transaction as every
-- create and status change, so the list's `total` does not have to count
-- 100k+ rows on every page. Several shards per (merchant, status) spread
-- concurrent writers over several rows on PostgreSQL; readers add them up.
CREATE TABLE shipment_counts (
    merchant_id BIGINT  NOT NULL REFERENCES merchants (id),
    status      TEXT    NOT NULL,
    shard       INTEGER NOT NULL,
    n           BIGINT  NOT NULL,
    PRIMARY KEY (merchant_id, status, shard)
);

INSERT INTO shipment_counts (merchant_id, status, shard, n)
SELECT merchant_id, status, 0, COUNT(*) FROM shipments GROUP BY merchant_id, status;
