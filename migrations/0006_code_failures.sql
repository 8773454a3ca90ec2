-- Wrong sign-in codes per address, for the "at most 20 wrong codes per address per 24 h"
-- rule. A row is written when a code check begins (in the same transaction that counts
-- the rows), and removed again when the code turns out right, so concurrent guesses
-- cannot slip past the count.
CREATE TABLE code_failures (
    id          INTEGER PRIMARY KEY,
    email_index BLOB NOT NULL,
    failed_at   INTEGER NOT NULL
);
CREATE INDEX code_failures_email ON code_failures(email_index, failed_at);
