-- A job's row of the tenant's job outbox: its kind, arguments' JSON, queue,
-- priority, attempts, the time it is scheduled at, and its unique states as
-- the text of a text[] or NULL. sqlq's PgxRows writes the caller's rows as
-- one multi-row VALUES list, not an INSERT ... SELECT FROM unnest:
-- Citus sends an INSERT ... SELECT through the coordinator, which copies its
-- rows to the tenant's node in a two-phase commit, where it routes an
-- INSERT ... VALUES to that node alone (docs/scaling.md, §Two-phase commits).
INSERT INTO ?schema.job_outbox (kind, args, queue, priority, max_attempts, scheduled_at, unique_states)
VALUES (?kind::text, ?args::text::json, ?queue::text, ?priority::smallint, ?max_attempts::smallint,
        ?scheduled_at::timestamptz, ?unique_states::text::text[])
