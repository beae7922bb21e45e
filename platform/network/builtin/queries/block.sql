-- The account account_id blocks the account blocked_id (once).
INSERT INTO network.blocks (account_id, blocked_account_id, created_at)
VALUES (?account_id, ?blocked_id, ?now) ON CONFLICT DO NOTHING
