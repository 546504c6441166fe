-- Accounts, keys and shipments. Timestamps are RFC 3339 text in UTC (sqlx's
-- chrono encoding), which sorts in time order; money is integer minor units.

CREATE TABLE merchants (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    email         TEXT    NOT NULL UNIQUE,
    password_hash TEXT    NOT NULL,
    created_at    TEXT    NOT NULL
);

CREATE TABLE courier_companies (
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL,
    active         BOOLEAN NOT NULL DEFAULT TRUE,
    base_fee_minor BIGINT  NOT NULL,
    per_kg_minor   BIGINT  NOT NULL,
    per_km_minor   BIGINT  NOT NULL,
    created_at     TEXT    NOT NULL
);

CREATE TABLE merchant_couriers (
    merchant_id        INTEGER NOT NULL REFERENCES merchants (id),
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    linked_at          TEXT    NOT NULL,
    PRIMARY KEY (merchant_id, courier_company_id)
);

CREATE TABLE drivers (
    id                 INTEGER PRIMARY KEY,
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    name               TEXT    NOT NULL,
    created_at         TEXT    NOT NULL
);
CREATE INDEX drivers_by_courier ON drivers (courier_company_id, id);

-- Merchant API keys and courier keys: only the SHA-256 digest of the secret.
CREATE TABLE api_keys (
    id           INTEGER PRIMARY KEY,
    merchant_id  INTEGER NOT NULL REFERENCES merchants (id),
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    last4        TEXT    NOT NULL,
    key_digest   TEXT    NOT NULL UNIQUE,
    created_at   TEXT    NOT NULL,
    last_used_at TEXT
);
CREATE INDEX api_keys_by_merchant ON api_keys (merchant_id, id);

CREATE TABLE courier_keys (
    id                 INTEGER PRIMARY KEY,
    courier_company_id INTEGER NOT NULL REFERENCES courier_companies (id),
    prefix             TEXT    NOT NULL,
    last4              TEXT    NOT NULL,
    key_digest         TEXT    NOT NULL UNIQUE,
    created_at         TEXT    NOT NULL,
    last_used_at       TEXT
);

CREATE TABLE shipments (
    id                     INTEGER PRIMARY KEY,
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
-- The merchant list is "newest first" with optional filters; these keep a
-- page and its count on an index for merchants with 100k+ shipments.
CREATE INDEX shipments_by_merchant ON shipments (merchant_id, created_at DESC, id DESC);
CREATE INDEX shipments_by_merchant_status ON shipments (merchant_id, status, created_at DESC, id DESC);
CREATE INDEX shipments_by_merchant_updated ON shipments (merchant_id, updated_at);
CREATE INDEX shipments_by_courier ON shipments (courier_company_id, created_at DESC, id DESC);

CREATE TABLE confirmation_codes (
    shipment_id     INTEGER PRIMARY KEY REFERENCES shipments (id),
    code_digest     TEXT    NOT NULL,
    expires_at      TEXT    NOT NULL,
    failed_attempts BIGINT  NOT NULL DEFAULT 0,
    created_at      TEXT    NOT NULL
);

-- The first answer to a create with an Idempotency-Key, replayed for 24 h.
CREATE TABLE idempotency_keys (
    merchant_id    INTEGER NOT NULL REFERENCES merchants (id),
    idem_key       TEXT    NOT NULL,
    request_digest TEXT    NOT NULL,
    response_body  TEXT    NOT NULL,
    created_at     TEXT    NOT NULL,
    PRIMARY KEY (merchant_id, idem_key)
);
