-- A receipt's change of the locked message id (ApplyReceipt).
UPDATE ?schema.messages m
  SET status = ?status::text, delivered_at = ?delivered_at::timestamptz, read_at = ?read_at::timestamptz,
      failed_at = ?failed_at::timestamptz, error_code = ?error_code::text, error_message = ?error_message::text,
      updated_at = ?now::timestamptz
  WHERE m.id = ?id::bigint
RETURNING ?{message_columns}
