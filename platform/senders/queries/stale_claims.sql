-- The phone claims older than a bound whose directory entry is neither
-- active nor suspended: those the sweep checks against their tenant row.
SELECT a.organization_id, o.schema_name, a.sender_id, a.phone, coalesce(d.status, '') AS status
  FROM central.active_sender_phones a
  JOIN central.organizations o ON o.id = a.organization_id
  LEFT JOIN central.sender_number_directory d ON d.organization_id = a.organization_id AND d.sender_id = a.sender_id
 WHERE a.claimed_at < ?before::timestamptz AND o.schema_name IS NOT NULL
   AND (d.status IS NULL OR d.status NOT IN (?active::text, ?suspended::text))
 ORDER BY a.organization_id, a.sender_id
