o AS (
  SELECT EXISTS (SELECT 1 FROM ?schema.opt_outs x WHERE x.phone = ?to_phone::text) AS opted_out)
