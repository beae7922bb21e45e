-- One page of the numbers waiting for their owner's account verification,
-- after a position (organization, sender), for the periodic sweep.
SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
  FROM central.sender_number_directory d
  JOIN central.organizations o ON o.id = d.organization_id
 WHERE d.status = ?status::text AND o.schema_name IS NOT NULL
   AND (d.organization_id, d.sender_id) > (?after_org::bigint, ?after_sender::bigint)
 ORDER BY d.organization_id, d.sender_id
 LIMIT ?limit::int
