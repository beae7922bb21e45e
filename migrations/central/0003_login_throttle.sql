-- Login throttling: one counter per account (a hash of the normalised email)
-- and one per client address, each over a fixed window. A login reserves an
-- attempt on both counters in one atomic upsert before the password is
-- checked, so the limits hold exactly across any number of API processes.
CREATE TABLE login_throttle (
    key          text        PRIMARY KEY,
    attempts     integer     NOT NULL CHECK (attempts >= 0),
    window_start timestamptz NOT NULL
);
CREATE INDEX login_throttle_window_idx ON login_throttle (window_start);
