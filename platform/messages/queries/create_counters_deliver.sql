-- The missing 'deliver' counters of daily_usage, one row per sender and
-- day in their order (Counters.Create, by PgxRows), nothing counted; an
-- existing row is left as it is.
INSERT INTO ?schema.daily_usage AS d (sender_number_id, day, side) VALUES (?sid::bigint, ?day::date, 'deliver') ON CONFLICT (sender_number_id, day, side) DO NOTHING
