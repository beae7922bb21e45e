-- Sets the confirmation texts: opt_out_reply when set_opt_out, opt_in_reply
-- when set_opt_in, the other kept; returns the texts in force.
INSERT INTO ?schema.consent_settings AS c (singleton, opt_out_reply, opt_in_reply, updated_at)
VALUES (true, ?opt_out_reply, ?opt_in_reply, ?updated_at)
ON CONFLICT (singleton) DO UPDATE
   SET opt_out_reply = CASE WHEN ?set_opt_out THEN EXCLUDED.opt_out_reply ELSE c.opt_out_reply END,
       opt_in_reply = CASE WHEN ?set_opt_in THEN EXCLUDED.opt_in_reply ELSE c.opt_in_reply END,
       updated_at = EXCLUDED.updated_at
RETURNING opt_out_reply, opt_in_reply, updated_at
