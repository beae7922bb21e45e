-- Whether the sender number is active in the tenant's own table: the
-- first statement of storeInboundRouted.
SELECT 1 FROM ?schema.sender_numbers
WHERE id = ?sender_id::bigint AND phone = ?to_phone::text AND status = 'active'
