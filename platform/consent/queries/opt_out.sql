-- Puts a phone on the list, unless it is there already (no row then).
INSERT INTO ?schema.opt_outs AS o (phone, source, keyword, sender_number_id, note, created_at)
VALUES (?phone, ?source, ?keyword, ?sender_number_id, ?note, ?created_at)
ON CONFLICT (phone) DO NOTHING
RETURNING ?{opt_out_entry}
