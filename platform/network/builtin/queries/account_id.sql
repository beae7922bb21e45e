-- The id of the account holding the phone.
SELECT id FROM network.accounts WHERE phone = ?phone
