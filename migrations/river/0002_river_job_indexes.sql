-- River's own migrations index every job's args and metadata in two GIN
-- indexes (jsonb_ops: an entry per key and per value). River itself never
-- reads them: its unique jobs use unique_key, and only a job list filtered
-- with JobListParams.Metadata or a Where on args would. The platform's one
-- such list is a message's delivery job (queue.DeliveryJobOf, under
-- GET /api/v1/messages/{id} and `platform admin jobs`), served below by a
-- btree on the two arguments that name the message.
--
-- Each job row costs the GIN indexes about nine entries, and again at each
-- of its state changes (running, completed: updates of an indexed column,
-- so new row versions that every index enters). Measured with pgbench, 8
-- clients, transactions inserting 22 webhook-shaped jobs: 1,220-1,322 tx/s
-- with the two indexes, 1,714-1,937 without (docs/performance.md, §River's
-- job indexes). A webhook endpoint adds two jobs a message to the send path,
-- so they weighed on it most.
--
-- The btree is partial: other kinds' jobs (webhook deliveries, OTPs, River's
-- own periodic jobs) enter no index but River's. Built here inside the
-- migration's transaction, it holds the job table's writes while it builds;
-- on a large job table build it CONCURRENTLY beforehand and this skips it
-- (docs/operations.md, §Upgrades that rebuild an index).
DROP INDEX IF EXISTS river_job_args_index;
DROP INDEX IF EXISTS river_job_metadata_index;
CREATE INDEX IF NOT EXISTS river_job_message_delivery_idx
    ON river_job (((args ->> 'org_id')::bigint), ((args ->> 'message_id')::bigint))
    WHERE kind = 'message_delivery';
