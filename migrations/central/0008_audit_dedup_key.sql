-- An audit entry written from a tenant's job outbox (docs/scaling.md, §Jobs:
-- a sender number's operator and network changes) carries the key its
-- writer drew: a move of the outbox that dies between its commits applies
-- the entry again, and the unique key makes the second insert a no-op.
-- Entries written in the transaction of their change have none (NULLs are
-- distinct, so the index holds only the keyed ones' uniqueness).
ALTER TABLE audit_log ADD COLUMN dedup_key text;
CREATE UNIQUE INDEX audit_log_dedup_key_idx ON audit_log (dedup_key);
