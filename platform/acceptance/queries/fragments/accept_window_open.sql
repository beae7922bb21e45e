(?type::text = 'template' OR EXISTS (SELECT 1 FROM ?schema.last_inbound l
  WHERE l.sender_number_id = s.id AND l.phone = ?to_phone::text
    AND l.at > ?at::timestamptz - make_interval(secs => ?window_secs::float8)))
