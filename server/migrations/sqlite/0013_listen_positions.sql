-- Listener streams follow the order in which changes reach listeners (a
-- dispatcher's claim commits), not the outbox ids, which are taken when a
-- change is written: a shipment's next change waits for the previous one's
-- delivery while later changes of other shipments go ahead, and several
-- processes' claims commit in any order. Each change fed to listeners gets
-- a position, taken from `listen_positions` in a transaction that holds its
-- one row until it commits, so positions grow in the order their changes
-- are announced. The position is the stream's event id (`Last-Event-ID`):
-- every change fed after a position has a higher one, so resuming after it
-- cannot skip a change.
ALTER TABLE outbox ADD COLUMN listen_position INTEGER;

-- Resuming reads a merchant's changes after a position.
CREATE INDEX outbox_by_listen_position ON outbox (merchant_id, listen_position)
    WHERE listen_position IS NOT NULL;

CREATE TABLE listen_positions (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    last_position INTEGER NOT NULL
);

-- Changes already fed keep their outbox id as their position (what their
-- events carried), and new positions start above every id, so a listener
-- that resumes across the upgrade finds what followed its last event.
UPDATE outbox SET listen_position = id
    WHERE claimed_by IS NOT NULL AND only_webhook_id IS NULL;
INSERT INTO listen_positions (singleton, last_position)
    SELECT 1, COALESCE((SELECT MAX(id) FROM outbox), 0);
