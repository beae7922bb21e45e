-- The next message of each conversation (senders, phones: nextOf): the
-- oldest still queued and not failing for longer than the order window,
-- by a forward probe of messages_queued_conversation_idx, with its
-- claimant and whether that claim still holds (lease seconds).
SELECT v.sender, v.phone, n.id, n.claimed_by,
       n.claimed_at > statement_timestamp() - make_interval(secs => ?lease::float8) AS claim_holds
  FROM unnest(?senders::bigint[], ?phones::text[]) v(sender, phone)
  CROSS JOIN LATERAL (
    SELECT e.id, e.claimed_by, e.claimed_at FROM ?schema.messages e
     WHERE e.sender_number_id = v.sender AND e.to_phone = v.phone AND e.status = 'queued'
       AND (e.failing_since IS NULL OR e.failing_since > ?since::timestamptz)
     ORDER BY e.id LIMIT 1) n
