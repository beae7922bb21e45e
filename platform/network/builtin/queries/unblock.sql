-- Lifts the block of the account blocked_id by the account account_id.
DELETE FROM network.blocks WHERE account_id = ?account_id AND blocked_account_id = ?blocked_id
