-- The audit log says who acted, not only which user: a member (user), an API
-- key whose user has left (api_key), the operator commands (operator), the
-- messaging network's own verification (network), or the platform itself
-- (system). The actor's id outlives the account (no foreign key: user ids are
-- never reused, and "who removed whom" must stay readable after the remover
-- leaves too), and so does the name the actor had when acting.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_user_id_fkey;
ALTER TABLE audit_log
    ADD COLUMN actor_type text NOT NULL DEFAULT 'user'
        CHECK (actor_type IN ('user', 'api_key', 'operator', 'network', 'system')),
    ADD COLUMN actor_api_key_id bigint,
    ADD COLUMN actor_name text;

UPDATE audit_log a SET
    actor_type = CASE
        WHEN a.actor_user_id IS NOT NULL THEN 'user'
        WHEN a.action LIKE 'sender.%' THEN 'operator'
        WHEN a.details ? 'via_api_key_id' THEN 'api_key'
        ELSE 'user'
    END,
    actor_api_key_id = CASE
        WHEN a.actor_user_id IS NULL AND a.details ? 'via_api_key_id'
            THEN (a.details ->> 'via_api_key_id')::bigint
    END,
    actor_name = (SELECT u.name FROM users u WHERE u.id = a.actor_user_id);

-- "Everything that happened to key 12": the target filter of the log's list.
CREATE INDEX audit_log_target_idx ON audit_log (organization_id, target, id DESC);
