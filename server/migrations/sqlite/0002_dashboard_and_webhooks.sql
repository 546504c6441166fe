-- Dashboard sessions, login throttling, webhooks and the delivery outbox.

-- Bearer tokens of dashboard sessions: only the SHA-256 digest.
CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY,
    merchant_id  INTEGER NOT NULL REFERENCES merchants (id),
    token_digest TEXT    NOT NULL UNIQUE,
    created_at   TEXT    NOT NULL,
    expires_at   TEXT    NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- Failed sign-ins, counted per e-mail over a sliding window. Kept in the
-- database so several server processes share one count.
CREATE TABLE login_failures (
    id        INTEGER PRIMARY KEY,
    email     TEXT    NOT NULL,
    failed_at TEXT    NOT NULL
);
CREATE INDEX login_failures_by_email ON login_failures (email, failed_at);

-- Signing keys are needed in clear to sign, so they are stored encrypted
-- (XChaCha20-Poly1305 under the server's data key), never as plain text.
CREATE TABLE webhooks (
    id                    INTEGER PRIMARY KEY,
    merchant_id           INTEGER NOT NULL REFERENCES merchants (id),
    url                   TEXT    NOT NULL,
    signing_key_encrypted TEXT    NOT NULL,
    active                BOOLEAN NOT NULL DEFAULT TRUE,
    created_at            TEXT    NOT NULL,
    UNIQUE (merchant_id, url)
);

CREATE TABLE shipment_signing_keys (
    merchant_id           INTEGER PRIMARY KEY REFERENCES merchants (id),
    signing_key_encrypted TEXT    NOT NULL,
    created_at            TEXT    NOT NULL
);

-- One row per shipment change, written in the change's transaction. The
-- payload is the shipment as GET showed it at that change.
CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY,
    shipment_id   INTEGER NOT NULL REFERENCES shipments (id),
    merchant_id   INTEGER NOT NULL REFERENCES merchants (id),
    shipment_code TEXT    NOT NULL,
    version       BIGINT  NOT NULL,
    payload       TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    claimed_by    TEXT,
    claimed_until TEXT,
    done_at       TEXT
);
CREATE INDEX outbox_pending ON outbox (id) WHERE done_at IS NULL;
CREATE INDEX outbox_pending_by_shipment ON outbox (shipment_id, id) WHERE done_at IS NULL;

-- One row per attempt at one target. webhook_id is NULL for a shipment's
-- own webhook_url.
CREATE TABLE webhook_deliveries (
    id            INTEGER PRIMARY KEY,
    outbox_id     INTEGER NOT NULL REFERENCES outbox (id),
    webhook_id    INTEGER REFERENCES webhooks (id) ON DELETE SET NULL,
    merchant_id   INTEGER NOT NULL REFERENCES merchants (id),
    url           TEXT    NOT NULL,
    shipment_code TEXT    NOT NULL,
    version       BIGINT  NOT NULL,
    status_code   BIGINT,
    error         TEXT,
    duration_ms   BIGINT  NOT NULL,
    delivered_at  TEXT    NOT NULL,
    UNIQUE (outbox_id, url)
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id DESC);
