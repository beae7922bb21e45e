-- How many buckets and tickets the table holds.
SELECT (SELECT count(*) FROM central.pace), (SELECT count(*) FROM central.pace_tickets)
