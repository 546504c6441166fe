-- A shipment's history: the dashboard's timeline shows every change of a
-- shipment in order, read from the outbox, which keeps each change's body.
-- Partial: a change's own rows only, not the redeliveries that copy them.
CREATE INDEX outbox_changes_by_shipment ON outbox (shipment_id, version)
    WHERE redelivery_of IS NULL;
