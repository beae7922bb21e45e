-- An entry (Record), its actor's name read from their account; an entry
-- whose key (dedup_key, RecordOnce) is in the log already writes nothing.
-- It runs in the change's pgx transaction (sqlq.Queries.Pgx).
INSERT INTO central.audit_log
    (organization_id, actor_type, actor_user_id, actor_api_key_id, actor_name, action, target, details, created_at, dedup_key)
VALUES (?org_id, ?actor_type, nullif(?user_id::bigint, 0), nullif(?key_id::bigint, 0),
        (SELECT name FROM central.users WHERE id = nullif(?user_id::bigint, 0)), ?action, ?target, ?details, ?at, nullif(?key, ''))
ON CONFLICT (dedup_key) DO NOTHING
