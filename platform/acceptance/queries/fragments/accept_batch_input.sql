i AS (
  SELECT (x.created_at AT TIME ZONE 'UTC')::date AS day, x.*
    FROM unnest(?sender_ids::bigint[], ?sender_phones::text[], ?to_phones::text[], ?types::text[],
                ?created::timestamptz[], ?limits::int[]) WITH ORDINALITY
         AS x(sender_id, sender_phone, to_phone, type, created_at, org_limit, ord))
