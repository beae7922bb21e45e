-- Consent (docs/api.md, §Opt-outs and §Service window).
--
-- opt_outs: the organization's suppression list, one row per phone that
-- asked not to be messaged (a STOP keyword to any of its numbers, the API
-- or the dashboard). An opt-in deletes the row. id orders the list, newest
-- first, and names the entry in the audit log.
CREATE TABLE opt_outs (
    id               bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    phone            text        PRIMARY KEY,
    source           text        NOT NULL CHECK (source IN ('keyword', 'api', 'dashboard')),
    keyword          text,
    sender_number_id bigint,
    note             text,
    created_at       timestamptz NOT NULL
);

-- consent_settings: the organization's confirmation texts; NULL is the
-- English default, '' sends no confirmation. At most one row.
CREATE TABLE consent_settings (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    opt_out_reply text,
    opt_in_reply  text,
    updated_at    timestamptz NOT NULL
);

-- last_inbound: when each phone last wrote to each sender number, for the
-- service window (a free-form message needs one within the window).
CREATE TABLE last_inbound (
    sender_number_id bigint      NOT NULL,
    phone            text        NOT NULL,
    at               timestamptz NOT NULL,
    PRIMARY KEY (sender_number_id, phone)
);

-- The opt-out rule's lock (docs/design.md, §Consent). An acceptance asks
-- opted_out(phone) inside its one statement: it takes the phone's lock in
-- share mode, held to its commit, then reads opt_outs with a snapshot of
-- its own (a volatile function's query sees what committed before it ran).
-- A change of the phone's opt-out takes the lock exclusively first
-- (lock_opt_out), so it waits for the acceptances already past the check,
-- and the acceptances after it wait for its commit and then read it: no
-- send is accepted after an opt-out committed. The key is the schema's and
-- the phone's hash: another organization's phone never shares it, short of
-- a hash collision, which only makes one wait for the other.
DO $migration$
DECLARE
    schema_key integer := hashtext(current_schema());
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION %1$I.opted_out(p text) RETURNS boolean
        LANGUAGE plpgsql VOLATILE AS $body$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(%2$s, hashtext(p));
            RETURN EXISTS (SELECT 1 FROM %1$I.opt_outs WHERE phone = p);
        END
        $body$$f$, current_schema(), schema_key);
    EXECUTE format($f$
        CREATE FUNCTION %1$I.lock_opt_out(p text) RETURNS void
        LANGUAGE sql VOLATILE AS $body$
            SELECT pg_advisory_xact_lock(%2$s, hashtext(p))
        $body$$f$, current_schema(), schema_key);
END
$migration$;
