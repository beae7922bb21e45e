-- Rates that hold across processes (platform/pace): the generic cell rate
-- algorithm (GCRA) keeps one theoretical arrival time (tat) per rate-limited
-- thing, advanced by one emission interval (1/rate) per event and never
-- allowed further than burst intervals ahead of now. Two users:
--   'sender:<schema>:<sender id>'  the delivery throttle of a sender number
--   'key:<api key id>'             the request rate of an API key
-- A row whose tat is in the past is a full bucket, the same as no row: a
-- sweep deletes such rows, so the table holds only what is busy now.
--
-- UNLOGGED: pace is ephemeral. Writing it costs no WAL and no commit flush,
-- so that taking a token is one cheap statement; after a crash of the
-- server (not of ours) Postgres empties the table and every bucket starts
-- full again, which lets one burst through and loses nothing else.
-- fillfactor leaves room on each page for the updated row (a HOT update:
-- the primary key is not touched, so no index write per token).
-- prev is the tat before the last statement that moved it: what that
-- statement returns to learn where the slots it took start (RETURNING sees
-- only the new row).
CREATE UNLOGGED TABLE pace (
    key  text        PRIMARY KEY,
    tat  timestamptz NOT NULL,
    prev timestamptz
) WITH (fillfactor = 50);

-- A reservation a delivery job made for a token due in the future, kept
-- under the job's ticket while the job snoozes for it, so that its next run
-- uses that token instead of taking (and paying for) another one.
CREATE UNLOGGED TABLE pace_tickets (
    ticket text        PRIMARY KEY,
    due    timestamptz NOT NULL
);
