-- The sign-in throttle as one row per e-mail, so reserving an attempt and
-- counting it is one atomic upsert (read-then-write on a log of failures let
-- a burst of concurrent guesses through before any failure was recorded).
DROP TABLE login_failures;
CREATE TABLE login_attempts (
    email        TEXT    PRIMARY KEY,
    window_start TEXT    NOT NULL,
    attempts     INTEGER NOT NULL
);
