-- The statuses of the organization's sender numbers among ids.
SELECT s.id, s.status FROM ?schema.sender_numbers s WHERE s.id = ANY(?ids::bigint[])
