r AS (
  SELECT x.id FROM ?schema.messages x WHERE x.id = ?id::bigint AND x.status = 'scheduled' FOR UPDATE)
