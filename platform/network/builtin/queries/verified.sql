-- Whether the account holding the phone is verified.
SELECT verified FROM network.accounts WHERE phone = ?phone
