-- The audit log (issue 26): who changed what on an account. Each row is written in the same
-- transaction as the change it records, so a change that rolls back leaves no row and a committed
-- change always has one. `seq` orders the log (newest first) and is the page cursor; `at` is the
-- service clock's time of the change. No secret is ever stored: `actor_id` and `target` are ids,
-- emails, plan or platform names.

CREATE TABLE audit_events (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  -- No foreign key: checking one would take a KEY SHARE lock on the account's row, which waits for
  -- any transaction holding it FOR UPDATE; a change that locks a key but not its account (a
  -- revocation) would then deadlock against one that locks the account, then the key (a rotation).
  -- Accounts are never deleted, and every row is written by the change to the account it names.
  account_id text NOT NULL,
  at bigint NOT NULL,
  action text NOT NULL,
  actor_kind text NOT NULL CHECK (actor_kind IN ('email', 'key', 'app', 'operator', 'service')),
  actor_id text NOT NULL,
  target text,
  ip text
);
CREATE INDEX audit_events_account ON audit_events (account_id, seq DESC);
