-- The buckets that are full again: a missing row is a full bucket.
DELETE FROM central.pace WHERE tat < statement_timestamp()
