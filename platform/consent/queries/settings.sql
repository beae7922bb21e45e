-- The organization's confirmation texts (no row: never set).
SELECT opt_out_reply, opt_in_reply, updated_at FROM ?schema.consent_settings
