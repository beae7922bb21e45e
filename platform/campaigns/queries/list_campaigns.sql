-- A page of campaigns, newest first, after id after (0: the first page),
-- of status status ('' any).
SELECT ?{campaign_columns} FROM ?schema.campaigns c
  WHERE (?after::bigint = 0 OR c.id < ?after) AND (?status::text = '' OR c.status = ?status)
  ORDER BY c.id DESC LIMIT ?limit
