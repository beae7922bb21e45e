-- Whether the citus extension exists in the database (a Citus coordinator).
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')
