-- The SET list of a sent record of x (old status o.status) from delivery v.
status = CASE WHEN o.status <> 'queued' THEN o.status
              WHEN v.delivered THEN 'delivered' ELSE 'sent' END,
    message_id = v.message_id, conversation_id = v.conversation_id,
    recipient_user_id = v.recipient_id, sent_at = v.sent_at,
    delivered_at = CASE WHEN v.delivered AND o.status <> 'failed' THEN coalesce(x.delivered_at, v.sent_at)
                        ELSE x.delivered_at END,
    updated_at = ?now::timestamptz
