-- The organization whose active sender number has the phone, in the
-- central directory (activeNumber).
SELECT a.organization_id, o.schema_name, a.sender_id
  FROM central.active_sender_phones a
  JOIN central.sender_number_directory d
    ON d.organization_id = a.organization_id AND d.sender_id = a.sender_id AND d.status = 'active'
  JOIN central.organizations o ON o.id = a.organization_id
 WHERE a.phone = ?phone
