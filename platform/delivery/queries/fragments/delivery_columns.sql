-- A message (m) with its sender (s), as claimRow.deliveryDest scans them.
?{message_columns}, s.phone AS sn_phone, s.status AS sn_status,
       s.daily_limit_override AS sn_daily_limit_override
