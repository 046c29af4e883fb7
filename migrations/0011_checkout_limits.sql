-- Who started each checkout. It decides who is shown a keyless checkout's new key (decisions,
-- "Checkout and portal"): `agent` (POST /v1/checkout without a bearer, a program) in the first
-- GET /v1/checkout/{session_id} after payment, `page` (the /upgrade form, a person) on the page
-- after payment. `spend_key` and `management` (a management token, or the dashboard's sign-in)
-- credit an existing account, and the page after payment says which. NULL: a session opened before
-- this column, whose key the first read of either kind shows, as it did then.
ALTER TABLE checkout_sessions ADD COLUMN origin text
  CHECK (origin IN ('agent', 'page', 'spend_key', 'management'));

-- Housekeeping deletes unpaid sessions and portal links some time past their expiry.
CREATE INDEX checkout_sessions_unpaid_expiry ON checkout_sessions (expires_at) WHERE status <> 'paid';
CREATE INDEX portal_sessions_expiry ON portal_sessions (expires_at);
