-- Counts kept per day of creation (UTC days since 1970-01-01), beside the
-- counts per courier and status, so a list filtered by creation date sums
-- the whole days of its range here and counts the shipments of at most two
-- partial days, and a deep page number finds the day its first row is on
-- without walking the rows before it. Written at commit in the same
-- transaction as the shipments (a create adds one, a status change moves
-- one between statuses of the same day: a shipment's creation day never
-- changes). Rebuilt from the shipments themselves.
CREATE TABLE shipment_counts_by_day (
    merchant_id        INTEGER NOT NULL REFERENCES merchants (id),
    day                INTEGER NOT NULL,
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    status             TEXT    NOT NULL,
    shard              INTEGER NOT NULL,
    n                  INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, day, courier_company_id, status, shard)
);

INSERT INTO shipment_counts_by_day (merchant_id, day, courier_company_id, status, shard, n)
SELECT merchant_id, CAST(strftime('%s', created_at) AS INTEGER) / 86400, courier_company_id,
       status, 0, COUNT(*)
FROM shipments GROUP BY 1, 2, 3, 4;

-- A courier company's own list sums its days across merchants.
CREATE INDEX shipment_counts_by_day_courier
    ON shipment_counts_by_day (courier_company_id, day);
