-- A redelivery's endpoint: whether it is enabled, locked against its
-- deletion for the transaction.
SELECT enabled FROM ?schema.webhook_endpoints WHERE id = ?id FOR KEY SHARE
