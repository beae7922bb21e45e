tl AS (
  SELECT x.id FROM ?schema.templates x WHERE x.id = ?template_id::bigint AND x.status = 'approved' FOR SHARE),
tp AS (
  SELECT EXISTS (SELECT 1 FROM tl) AS approved)
