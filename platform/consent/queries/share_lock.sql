-- The opt-out locks of the phones (text[], each once) of the tenant
-- schema named schema_name, in share mode, for the transaction (lock.go):
-- what a send's transaction takes before its acceptance statement. It
-- names no table and no schema, so its text is every tenant's.
SELECT pg_advisory_xact_lock_shared(hashtext(?schema_name::text), hashtext(p)) FROM unnest(?phones::text[]) AS p
