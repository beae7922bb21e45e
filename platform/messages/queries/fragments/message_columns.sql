-- A message row's columns of the messages table (or of a statement's
-- result with its columns) aliased m, in the order of Row.ScanDest
-- (messages.Columns; TestColumnsFragment holds the two to one order).
m.id, m.sender_number_id, m.to_phone, m.recipient_user_id, m.conversation_id, m.message_id, m.type,
m.content, m.file_name, m.file_size, m.file_type, m.duration, m.status, m.error_code, m.error_message,
m.client_reference, m.created_at, m.sent_at, m.delivered_at, m.failed_at, m.dispatched_at, m.updated_at,
m.direction, m.from_phone, m.read_at, m.received_at, m.template_id, m.template_ref, m.campaign_id,
m.send_at, m.canceled_at
