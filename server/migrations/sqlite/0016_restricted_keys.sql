-- Restricted and expiring API keys (issue 40). A restricted key (`rk_`)
-- stores what it may do as the SDK's `Permissions` in their text form,
-- every resource named (`shipments:read,couriers:read,listen:none,testing:none`);
-- a full key (`sk_`) stores NULL and may do everything the merchant may.
-- `expires_at`: when the key stops working; NULL for never. Expiry is a
-- time, so no process needs telling when it comes; the test controls'
-- expire sets it to now and is announced as a deletion is.
ALTER TABLE api_keys ADD COLUMN permissions TEXT;
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
