-- River's own migrations create two GIN indexes on river_job (args and
-- metadata). GIN adds new entries to a pending list, and the statement whose
-- insert takes the list past gin_pending_list_limit (4 MB by default) merges
-- all of it into the index before it returns: 60-130 ms and about 1.5 MB of
-- WAL here, in whichever acceptance (its job insert) or River state update
-- crosses the line. An acceptance holds its senders' counter rows meanwhile,
-- so every acceptance of those senders queues behind it. A delivery job is
-- inserted and updated twice, so at a thousand messages a second the list
-- filled every few seconds: this was most of the benchmark's open-loop tail
-- (docs/performance.md, §GIN pending list).
--
-- A 64 kB list (the least Postgres allows) keeps the pending list's batched
-- merge, at a sixty-fourth of the stall. Turning the list off (fastupdate =
-- off) bounds the tail as well, but every insert and update then writes the
-- index itself: a quarter more WAL per message and a few percent of
-- throughput in the same measurements.
--
-- Applied to the river schema after River's migrations; the entries already
-- pending are merged now rather than by the next insert that crosses the line.
ALTER INDEX river_job_args_index SET (gin_pending_list_limit = 64);
ALTER INDEX river_job_metadata_index SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list('river_job_args_index'::regclass);
SELECT gin_clean_pending_list('river_job_metadata_index'::regclass);
