-- Webhooks (docs/api.md, §Webhooks): the organization's endpoints, the
-- events written in the transaction of the change they report, and one
-- delivery per event and subscribed endpoint, worked by a River job.

-- An endpoint. secret signs every request (whsec_ + base64 of the key);
-- previous_secret still signs until previous_secret_until, after a
-- rotation. failing_since is the first failed attempt after the last
-- success (null while the endpoint answers); an endpoint failing for 24
-- hours is disabled with a sentence in disabled_reason.
CREATE TABLE webhook_endpoints (
    id                    bigserial PRIMARY KEY,
    url                   text        NOT NULL,
    description           text        NOT NULL DEFAULT '',
    events                text[]      NOT NULL CHECK (cardinality(events) > 0),
    enabled               boolean     NOT NULL DEFAULT true,
    disabled_reason       text,
    secret                text        NOT NULL,
    previous_secret       text,
    previous_secret_until timestamptz,
    failing_since         timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- An event. public_id is its webhook-id header, the same on every attempt
-- and redelivery; body is the exact payload, so every attempt sends the same
-- bytes; key orders the events of one resource ("message:42").
CREATE TABLE webhook_events (
    id         bigserial PRIMARY KEY,
    public_id  text        NOT NULL UNIQUE,
    type       text        NOT NULL,
    key        text        NOT NULL,
    body       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A delivery of an event to an endpoint. key is the event's, copied so the
-- ordering check reads one index. next_attempt_at is set while pending.
CREATE TABLE webhook_deliveries (
    id               bigserial PRIMARY KEY,
    endpoint_id      bigint      NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         bigint      NOT NULL REFERENCES webhook_events (id),
    key              text        NOT NULL,
    state            text        NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_status_code integer,
    last_error       text,
    latency_ms       integer,
    next_attempt_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- The delivery log of an endpoint, newest first (and the cascade of a deleted endpoint).
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id DESC);
-- The ordering check: the earliest pending delivery of a key to an endpoint.
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, key, id) WHERE state = 'pending';
-- Redelivery of the failed deliveries created since a time.
CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (endpoint_id, created_at) WHERE state = 'failed';
-- The deliveries of an event (its foreign key, and redelivery's look for a newer one).
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id, endpoint_id);
