-- What a merchant per test is made of. `merchants.test_made_by` is the
-- merchant whose key made it through `POST /testing/merchants` (NULL for
-- every other merchant: only test merchants can be deleted there, and the
-- limits on how many exist count them). `courier_companies.test_merchant_id`
-- is the test merchant a company was made for: a copy of a company its
-- creator is linked to, so a test merchant's courier key sees only that
-- test merchant's shipments; it is deleted with the test merchant.
-- (Ids need nothing here: identity columns never give an id out twice.
-- SQLite's 0012 makes its ids do the same.)
ALTER TABLE merchants ADD COLUMN test_made_by BIGINT;
CREATE INDEX merchants_by_test_made_by ON merchants (test_made_by) WHERE test_made_by IS NOT NULL;
ALTER TABLE courier_companies ADD COLUMN test_merchant_id BIGINT;
CREATE INDEX courier_companies_by_test_merchant ON courier_companies (test_merchant_id)
    WHERE test_merchant_id IS NOT NULL;
