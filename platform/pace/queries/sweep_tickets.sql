-- The tickets whose slot fell due more than ttl seconds ago.
DELETE FROM central.pace_tickets WHERE due < statement_timestamp() - ?ttl::float8 * interval '1 second'
