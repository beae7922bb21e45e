-- A successful login gives its attempt back: the account's counter is
-- cleared, the address's decremented.
WITH cleared AS (DELETE FROM central.login_throttle WHERE key = ?account::text)
UPDATE central.login_throttle SET attempts = attempts - 1 WHERE key = ?address::text AND attempts > 0
