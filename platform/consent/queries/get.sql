-- A phone's entry.
SELECT ?{opt_out_entry} FROM ?schema.opt_outs o WHERE phone = ?phone
