-- The free per-IP daily budget and the operator's global ceiling, per UTC day (days since epoch).
CREATE TABLE free_tier_usage (
  ip text NOT NULL,
  day integer NOT NULL,
  credits_used integer NOT NULL DEFAULT 0 CHECK (credits_used >= 0),
  PRIMARY KEY (ip, day)
);

CREATE TABLE free_tier_days (
  day integer PRIMARY KEY,
  credits_used bigint NOT NULL DEFAULT 0 CHECK (credits_used >= 0)
);

-- One row per metered call. While state = 'reserved' it is the account's in-flight lease and
-- holds the reserved funds; settled, it is the receipt.
CREATE TABLE calls (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  key_id text NOT NULL,
  operation text NOT NULL,
  state text NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
  ip text NOT NULL,
  day integer NOT NULL,
  quoted integer NOT NULL,
  reserved_free integer NOT NULL,
  reserved_grant integer NOT NULL,
  reserved_balance integer NOT NULL,
  charged integer NOT NULL DEFAULT 0,
  charged_free integer NOT NULL DEFAULT 0,
  charged_grant integer NOT NULL DEFAULT 0,
  charged_balance integer NOT NULL DEFAULT 0,
  refunds text NOT NULL DEFAULT '[]',
  idempotency_key text,
  lease_expires_at bigint NOT NULL,
  created_at bigint NOT NULL,
  settled_at bigint
);
-- The one-in-flight rule, enforced by the database across every instance.
CREATE UNIQUE INDEX calls_one_in_flight ON calls (account_id) WHERE state = 'reserved';
CREATE INDEX calls_receipts ON calls (account_id, created_at DESC, id DESC) WHERE state = 'settled';
CREATE INDEX calls_expired_leases ON calls (lease_expires_at) WHERE state = 'reserved';

CREATE TABLE idempotency_keys (
  account_id text NOT NULL,
  idem_key text NOT NULL,
  fingerprint text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'done')),
  call_id text,
  response text,
  lease_expires_at bigint NOT NULL,
  replay_until bigint,
  tombstone_until bigint,
  created_at bigint NOT NULL,
  PRIMARY KEY (account_id, idem_key)
);
