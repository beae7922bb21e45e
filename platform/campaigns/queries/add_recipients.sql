-- The recipients phones, variables (JSON text) and refs (client
-- references) of campaign id in their order, each phone once: a phone the
-- campaign has already is left as it is. One statement a request.
INSERT INTO ?schema.campaign_recipients (campaign_id, phone, variables, client_reference, updated_at)
  SELECT ?id::bigint, r.phone, r.variables::jsonb, r.ref, ?now::timestamptz
    FROM unnest(?phones::text[], ?variables::text[], ?refs::text[]) WITH ORDINALITY AS r(phone, variables, ref, n)
   ORDER BY r.n
  ON CONFLICT ON CONSTRAINT campaign_recipients_phone_key DO NOTHING
