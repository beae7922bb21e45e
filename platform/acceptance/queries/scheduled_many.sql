-- Stored messages ids for their release together (releaseBatch): their
-- columns as messages.Row scans them.
SELECT ?{message_columns} FROM ?schema.messages m WHERE m.id = ANY(?ids::bigint[])
