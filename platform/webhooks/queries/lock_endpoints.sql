-- The routed expansion's second step: the endpoints of ids that still
-- exist, locked against their deletion for the transaction.
SELECT id FROM ?schema.webhook_endpoints WHERE id = ANY(?ids::bigint[]) FOR KEY SHARE
