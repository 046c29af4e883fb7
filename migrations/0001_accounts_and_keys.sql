-- Accounts, their spend keys, and the operator's switches.
-- Times are epoch milliseconds (bigint) taken from the service's Clock, never from the database,
-- so virtual time in tests and real time in production follow the same code.
CREATE TABLE accounts (
  id text PRIMARY KEY,
  plan text NOT NULL DEFAULT 'trial' CHECK (plan IN ('trial', 'flex', 'production')),
  state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended')),
  email text,
  claimed_at bigint,
  grant_credits bigint NOT NULL DEFAULT 0 CHECK (grant_credits >= 0),
  balance_credits bigint NOT NULL DEFAULT 0 CHECK (balance_credits >= 0),
  entitlements text NOT NULL DEFAULT 'profnet,forum,microblog',
  created_ip text,
  created_at bigint NOT NULL
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  secret_hash text NOT NULL UNIQUE,
  hint text NOT NULL,
  label text,
  created_at bigint NOT NULL,
  revoked_at bigint
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- Credits added to an account (operator credit, grant, purchase): the other side of every debit.
CREATE TABLE credit_events (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  kind text NOT NULL CHECK (kind IN ('grant', 'balance')),
  credits bigint NOT NULL,
  reason text NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX credit_events_account ON credit_events (account_id);

CREATE TABLE settings (
  name text PRIMARY KEY,
  value text NOT NULL
);
