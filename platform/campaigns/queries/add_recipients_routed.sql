-- add_recipients on Citus (Config.Routed): a VALUES row per recipient,
-- which Citus routes to the tenant's node (addRecipients, by PgxRows).
INSERT INTO ?schema.campaign_recipients (campaign_id, phone, variables, client_reference, updated_at) VALUES (?id::bigint, ?phone::text, ?variables::text::jsonb, ?ref::text, ?now::timestamptz) ON CONFLICT ON CONSTRAINT campaign_recipients_phone_key DO NOTHING
