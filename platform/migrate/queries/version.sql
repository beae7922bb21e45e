-- The schema's applied version.
SELECT coalesce(max(version), 0) FROM ?schema.schema_migrations
