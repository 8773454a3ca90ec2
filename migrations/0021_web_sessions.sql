-- Web sessions (review finding: a Matrix token handed to page script): a session opened with
-- `X-Switchboard-Client: web` is marked here and never gets a Matrix device, neither at
-- sign-in nor later from `GET /api/accounts/active` (which opens one for other sessions that
-- lost theirs).
ALTER TABLE refresh_tokens ADD COLUMN web INTEGER NOT NULL DEFAULT 0;
