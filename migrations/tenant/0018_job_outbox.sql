-- The job outbox (docs/scaling.md, §Jobs): a transaction of the tenant
-- that queues River jobs (a send's delivery jobs, a webhook outbox
-- expansion's attempts, a campaign's release job) writes them here, in the
-- tenant's schema, instead of in River's river_job, so that it writes one
-- node on Citus and stays atomic. A mover (platform/joboutbox) turns the
-- rows into River jobs afterwards, in a transaction on River's schema
-- alone, and deletes them.
--
-- A row is one job's River insert: its kind and JSON arguments (json, not
-- jsonb: the bytes as encoded, which River's unique key is computed from),
-- queue, priority and attempts (0 or '': River's default), when it is due
-- (NULL: now), and for a job unique by its arguments the states its
-- uniqueness holds in (NULL: not unique).
CREATE TABLE job_outbox (
    id            bigserial   PRIMARY KEY,
    kind          text        NOT NULL,
    args          json        NOT NULL,
    queue         text        NOT NULL,
    priority      smallint    NOT NULL,
    max_attempts  smallint    NOT NULL,
    scheduled_at  timestamptz,
    unique_states text[]
);
