-- Message id of the tenant, locked for a receipt (lockRow).
SELECT ?{message_columns} FROM ?schema.messages m
WHERE m.id = ?id::bigint FOR UPDATE
