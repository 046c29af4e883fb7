-- Identity and governance: confirmed emails, their management tokens, sign-in challenges,
-- command-line sign-in, recovery links, the one-time grant, balance alerts and the mail outbox.
-- Every secret (token, code, link, device code) is stored as its SHA-256 hash only.

-- An identity is a confirmed email (lower-cased); `accounts.email` names an account's owner.
CREATE TABLE identities (
  email text PRIMARY KEY,
  created_at bigint NOT NULL
);
CREATE INDEX accounts_owner ON accounts (email) WHERE email IS NOT NULL;

-- Balance alert: `alert_armed` is true while the spendable credits (grant + balance) are at or
-- above the threshold; the charge that takes them below it disarms it and queues one email in the
-- same transaction, so one crossing is one email however many charges race.
ALTER TABLE accounts ADD COLUMN alert_threshold bigint NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN alert_armed boolean NOT NULL DEFAULT false;

ALTER TABLE api_keys ADD COLUMN last_used_at bigint;

-- `svcm_` management tokens, per identity; 90 days.
CREATE TABLE management_tokens (
  id text PRIMARY KEY,
  email text NOT NULL REFERENCES identities (email),
  secret_hash text NOT NULL UNIQUE,
  label text NOT NULL CHECK (label IN ('web', 'cli', 'device')),
  created_at bigint NOT NULL,
  last_used_at bigint,
  expires_at bigint NOT NULL,
  revoked_at bigint
);
CREATE INDEX management_tokens_email ON management_tokens (email);

-- One emailed sign-in: a 6-digit code and a single-use link, both hashed. `key_id` is the spend
-- key that started it (a claim). A newer start for the email supersedes the older ones.
CREATE TABLE sign_ins (
  id text PRIMARY KEY,
  email text NOT NULL,
  code_hash text NOT NULL,
  link_hash text NOT NULL UNIQUE,
  key_id text,
  attempts integer NOT NULL DEFAULT 0,
  expires_at bigint NOT NULL,
  used_at bigint,
  created_at bigint NOT NULL
);
CREATE INDEX sign_ins_email ON sign_ins (email, created_at DESC);

-- The one-time grant: once per email and once per key, enforced by the database.
CREATE TABLE grants (
  account_id text NOT NULL REFERENCES accounts (id),
  email text NOT NULL UNIQUE,
  key_id text NOT NULL UNIQUE,
  credits bigint NOT NULL,
  created_at bigint NOT NULL
);

-- Command-line sign-in by device code (RFC 8628): pending until a signed-in person approves the
-- user code; the approval names the identity, and the first poll after it takes the token.
CREATE TABLE device_codes (
  id text PRIMARY KEY,
  device_hash text NOT NULL UNIQUE,
  user_code text NOT NULL UNIQUE,
  state text NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'used')),
  email text,
  interval_ms integer NOT NULL,
  last_poll_at bigint,
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL
);

-- Single-use codes of the loopback browser callback (RFC 8252), exchanged for a token.
CREATE TABLE exchange_codes (
  code_hash text PRIMARY KEY,
  email text NOT NULL REFERENCES identities (email),
  expires_at bigint NOT NULL,
  used_at bigint,
  created_at bigint NOT NULL
);

-- Recovery links: one per claimed account, single use, one hour.
CREATE TABLE recovery_links (
  link_hash text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  expires_at bigint NOT NULL,
  used_at bigint,
  created_at bigint NOT NULL
);

-- Mail: written in the transaction of the change that causes it, delivered by a worker with
-- retries. A delivered message's bodies are cleared (they may hold a code or a link).
CREATE TABLE outbox (
  id text PRIMARY KEY,
  to_email text NOT NULL,
  subject text NOT NULL,
  body_text text,
  body_html text,
  kind text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  locked_until bigint,
  last_error text,
  sent_at bigint,
  created_at bigint NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at IS NULL;
CREATE INDEX outbox_recipient ON outbox (to_email, created_at DESC);
