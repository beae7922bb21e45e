-- Takes a phone off the list, returning its entry (no row: it was not on
-- the list).
DELETE FROM ?schema.opt_outs AS o WHERE phone = ?phone RETURNING ?{opt_out_entry}
