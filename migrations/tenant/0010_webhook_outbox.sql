-- The webhook outbox (docs/design.md, §Webhooks): a transaction that
-- records webhook events writes them here, one row for all its events,
-- and the process that committed it turns the row into the deliveries and
-- their River jobs afterwards, behind the yield gate, oldest row first,
-- deleting it in the same transaction. So the send path's transaction
-- writes one row and one index entry where it wrote, per event and
-- subscribed endpoint, a delivery row (three index entries) and a River
-- job row (three: its key, kind and fetch order).
--
-- A row holds its events as parallel arrays (their webhook-ids, types,
-- ordering keys and payloads, in the order they happened) and its
-- deliveries as two more (for each, the event's place in the first arrays,
-- from 1, and the endpoint that was subscribed when the event happened),
-- in the order their delivery ids are to be given. created_at is when the
-- events were recorded: the deliveries' creation, from which they are
-- retried for 24 hours.
CREATE TABLE webhook_outbox (
    id              bigserial   PRIMARY KEY,
    created_at      timestamptz NOT NULL,
    event_ids       text[]      NOT NULL,
    event_types     text[]      NOT NULL,
    event_keys      text[]      NOT NULL,
    bodies          text[]      NOT NULL,
    delivery_events integer[]   NOT NULL,
    endpoint_ids    bigint[]    NOT NULL,
    CHECK (cardinality(delivery_events) = cardinality(endpoint_ids))
);
