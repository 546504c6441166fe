-- no-transaction
-- Ids are never given out twice (SQLite only: PostgreSQL's identity columns
-- never go back). Without AUTOINCREMENT SQLite gives a new row the largest
-- id + 1, so deleting the newest rows (a test merchant's deletion does)
-- hands their ids to the next rows, and a process that remembered a row by
-- id (the listed-rows memo of another process on the same file, a
-- receiver, a log) would take one row for another. AUTOINCREMENT keeps the
-- highest id ever given in `sqlite_sequence`. A column's AUTOINCREMENT
-- cannot be added by ALTER TABLE, so each table with an `id` key is rebuilt
-- as SQLite's documented procedure does (https://sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"): foreign keys off, in one
-- transaction, a new table, its rows copied, the old dropped, the new
-- renamed, its indexes made again (rows are copied one for one with their
-- ids, so every reference holds as it held). The statements were written
-- from the schema of 0001-0011 as it stands, columns in the same order, so
-- each copy is `SELECT *`.
--
-- It also records what a merchant per test is made of (0012 for PostgreSQL
-- has the same two columns): `merchants.test_made_by` is the merchant whose
-- key made it through `POST /testing/merchants` (NULL for every other
-- merchant: only those can be deleted there), and
-- `courier_companies.test_merchant_id` the test merchant a company was made
-- for (a copy of a company its creator is linked to; deleted with it).
PRAGMA foreign_keys = OFF;
BEGIN;

CREATE TABLE merchants_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL,
    email         TEXT    NOT NULL UNIQUE,
    password_hash TEXT    NOT NULL,
    created_at    TEXT    NOT NULL
);
INSERT INTO merchants_new SELECT * FROM merchants;
DROP TABLE merchants;
ALTER TABLE merchants_new RENAME TO merchants;

CREATE TABLE courier_companies_new (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT    NOT NULL,
    active         BOOLEAN NOT NULL DEFAULT TRUE,
    base_fee_minor BIGINT  NOT NULL,
    per_kg_minor   BIGINT  NOT NULL,
    per_km_minor   BIGINT  NOT NULL,
    created_at     TEXT    NOT NULL
);
INSERT INTO courier_companies_new SELECT * FROM courier_companies;
DROP TABLE courier_companies;
ALTER TABLE courier_companies_new RENAME TO courier_companies;

CREATE TABLE drivers_new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    name               TEXT    NOT NULL,
    created_at         TEXT    NOT NULL
);
INSERT INTO drivers_new SELECT * FROM drivers;
DROP TABLE drivers;
ALTER TABLE drivers_new RENAME TO drivers;
CREATE INDEX drivers_by_courier ON drivers (courier_company_id, id);

CREATE TABLE api_keys_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id  INTEGER NOT NULL REFERENCES merchants (id),
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    last4        TEXT    NOT NULL,
    key_digest   TEXT    NOT NULL UNIQUE,
    created_at   TEXT    NOT NULL,
    last_used_at TEXT
);
INSERT INTO api_keys_new SELECT * FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_new RENAME TO api_keys;
CREATE INDEX api_keys_by_merchant ON api_keys (merchant_id, id);

CREATE TABLE courier_keys_new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    prefix             TEXT    NOT NULL,
    last4              TEXT    NOT NULL,
    key_digest         TEXT    NOT NULL UNIQUE,
    created_at         TEXT    NOT NULL,
    last_used_at       TEXT
);
INSERT INTO courier_keys_new SELECT * FROM courier_keys;
DROP TABLE courier_keys;
ALTER TABLE courier_keys_new RENAME TO courier_keys;

CREATE TABLE shipments_new (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    code                   TEXT    NOT NULL UNIQUE,
    merchant_id            INTEGER NOT NULL REFERENCES merchants (id),
    courier_company_id     INTEGER NOT NULL REFERENCES courier_companies (id),
    status                 TEXT    NOT NULL,
    assigned_driver_id     INTEGER REFERENCES drivers (id),
    description            TEXT,
    weight_kg              TEXT,
    dimensions             TEXT,
    items                  TEXT    NOT NULL,
    start_address          TEXT,
    end_address            TEXT,
    total_fee_minor        BIGINT  NOT NULL,
    webhook_url            TEXT,
    version                BIGINT  NOT NULL,
    rating                 BIGINT,
    failure_reason         TEXT,
    created_at             TEXT    NOT NULL,
    assigned_to_courier_at TEXT,
    assigned_to_driver_at  TEXT,
    picked_up_at           TEXT,
    delivered_at           TEXT,
    failed_at              TEXT,
    returned_at            TEXT,
    cancelled_at           TEXT,
    rated_at               TEXT,
    updated_at             TEXT    NOT NULL
);
INSERT INTO shipments_new SELECT * FROM shipments;
DROP TABLE shipments;
ALTER TABLE shipments_new RENAME TO shipments;
CREATE INDEX shipments_by_merchant ON shipments (merchant_id, created_at DESC, id DESC);
CREATE INDEX shipments_by_merchant_status ON shipments (merchant_id, status, created_at DESC, id DESC);
CREATE INDEX shipments_by_merchant_updated ON shipments (merchant_id, updated_at);
CREATE INDEX shipments_by_courier ON shipments (courier_company_id, created_at DESC, id DESC);
CREATE INDEX shipments_by_merchant_courier
    ON shipments (merchant_id, courier_company_id, created_at DESC, id DESC);

CREATE TABLE sessions_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id  INTEGER NOT NULL REFERENCES merchants (id),
    token_digest TEXT    NOT NULL UNIQUE,
    created_at   TEXT    NOT NULL,
    expires_at   TEXT    NOT NULL
);
INSERT INTO sessions_new SELECT * FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

CREATE TABLE webhooks_new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id           INTEGER NOT NULL REFERENCES merchants (id),
    url                   TEXT    NOT NULL,
    signing_key_encrypted TEXT    NOT NULL,
    active                BOOLEAN NOT NULL DEFAULT TRUE,
    created_at            TEXT    NOT NULL,
    UNIQUE (merchant_id, url)
);
INSERT INTO webhooks_new SELECT * FROM webhooks;
DROP TABLE webhooks;
ALTER TABLE webhooks_new RENAME TO webhooks;

CREATE TABLE outbox_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    shipment_id   INTEGER NOT NULL REFERENCES shipments (id),
    merchant_id   INTEGER NOT NULL REFERENCES merchants (id),
    shipment_code TEXT    NOT NULL,
    version       BIGINT  NOT NULL,
    payload       TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    claimed_by    TEXT,
    claimed_until TEXT,
    done_at       TEXT
, webhook_url TEXT, signing_key_merchant_id INTEGER, only_webhook_id INTEGER, redelivery_of INTEGER, trace_parent TEXT);
INSERT INTO outbox_new SELECT * FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_pending ON outbox (id) WHERE done_at IS NULL;
CREATE INDEX outbox_pending_by_shipment ON outbox (shipment_id, id) WHERE done_at IS NULL;
CREATE INDEX outbox_redeliveries ON outbox (merchant_id, created_at)
    WHERE redelivery_of IS NOT NULL;

CREATE TABLE webhook_deliveries_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_id     INTEGER NOT NULL REFERENCES outbox (id),
    webhook_id    INTEGER REFERENCES webhooks (id) ON DELETE SET NULL,
    merchant_id   INTEGER NOT NULL REFERENCES merchants (id),
    url           TEXT    NOT NULL,
    shipment_code TEXT    NOT NULL,
    version       BIGINT  NOT NULL,
    status_code   BIGINT,
    error         TEXT,
    duration_ms   BIGINT  NOT NULL,
    delivered_at  TEXT    NOT NULL, redelivery_of INTEGER,
    UNIQUE (outbox_id, url)
);
INSERT INTO webhook_deliveries_new SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id DESC);
CREATE INDEX webhook_deliveries_by_shipment
    ON webhook_deliveries (merchant_id, shipment_code, id DESC);
CREATE INDEX webhook_deliveries_failed
    ON webhook_deliveries (webhook_id, delivered_at) WHERE error IS NOT NULL;

ALTER TABLE merchants ADD COLUMN test_made_by INTEGER;
CREATE INDEX merchants_by_test_made_by ON merchants (test_made_by) WHERE test_made_by IS NOT NULL;
ALTER TABLE courier_companies ADD COLUMN test_merchant_id INTEGER;
CREATE INDEX courier_companies_by_test_merchant ON courier_companies (test_merchant_id)
    WHERE test_merchant_id IS NOT NULL;

COMMIT;
PRAGMA foreign_keys = ON;
