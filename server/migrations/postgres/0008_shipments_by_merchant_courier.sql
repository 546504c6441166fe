-- A merchant's list filtered by courier company: the page walks this index
-- in order and the exact total counts its entries, instead of reading every
-- shipment of the merchant (or of the courier) to test the other column.
CREATE INDEX shipments_by_merchant_courier
    ON shipments (merchant_id, courier_company_id, created_at DESC, id DESC);
