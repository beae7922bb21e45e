-- Notices the platform sends once per thing (api_key.expiring per key): the
-- row is written in the transaction of the notice's webhook event, so a
-- notice is recorded exactly when its event is.
CREATE TABLE notices (
    kind       text        NOT NULL,
    ref        bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, ref)
);
