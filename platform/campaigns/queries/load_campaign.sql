-- Campaign id (load).
SELECT ?{campaign_columns} FROM ?schema.campaigns c WHERE c.id = ?id
