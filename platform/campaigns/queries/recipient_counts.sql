-- The recipients of campaigns ids by stored status and, for skipped
-- ones, error_code.
SELECT r.campaign_id, r.status, coalesce(r.error_code, ''), count(*)
  FROM ?schema.campaign_recipients r WHERE r.campaign_id = ANY(?ids::bigint[])
  GROUP BY r.campaign_id, r.status, r.error_code
