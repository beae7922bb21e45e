status = 'queued', to_phone = ?to_phone::text, recipient_user_id = ?recipient_user_id::bigint,
         type = ?type::text, content = ?content::text, file_name = ?file_name::text,
         file_size = ?file_size::bigint, file_type = ?file_type::text, duration = ?duration::bigint,
         client_reference = ?client_reference::text, created_at = ?at::timestamptz, updated_at = ?at::timestamptz
