-- Message id of the tenant (Get).
SELECT ?{message_columns} FROM ?schema.messages m WHERE m.id = ?id::bigint
