-- Draws n message ids from the messages' sequence.
SELECT nextval('?schema.messages_id_seq'::regclass) FROM generate_series(1, ?n::int)
