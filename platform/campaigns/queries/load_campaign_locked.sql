-- Campaign id, locked for the transaction: a change of state, an
-- addition of recipients (load).
SELECT ?{campaign_columns} FROM ?schema.campaigns c WHERE c.id = ?id FOR UPDATE
