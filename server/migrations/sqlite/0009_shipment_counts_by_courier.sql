-- The kept counts gain the courier company, so a list filtered by courier
-- (a merchant's, or a courier company's own) takes its exact total from
-- here instead of counting every matching shipment. A shipment's courier
-- never changes, so a create and a status change still touch one or two
-- counters. Rebuilt from the shipments themselves.
CREATE TABLE shipment_counts_by_courier (
    merchant_id        INTEGER NOT NULL REFERENCES merchants (id),
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    status             TEXT    NOT NULL,
    shard              INTEGER NOT NULL,
    n                  INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, courier_company_id, status, shard)
);

INSERT INTO shipment_counts_by_courier (merchant_id, courier_company_id, status, shard, n)
SELECT merchant_id, courier_company_id, status, 0, COUNT(*)
FROM shipments GROUP BY merchant_id, courier_company_id, status;

-- A courier company's own list sums its counters across merchants.
CREATE INDEX shipment_counts_by_courier_company
    ON shipment_counts_by_courier (courier_company_id, status);

DROP TABLE shipment_counts;
