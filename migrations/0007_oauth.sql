-- OAuth for MCP clients: the authorization server's own records (oidc-provider's models), the
-- connected apps (one per account and client) and the server's keys, shared by every instance.

-- Every oidc-provider model in one table: `payload` is the library's JSON as given. `grant_id`,
-- `uid` and `user_code` are the lookups it asks for; `account_id` and `client_id` let revoking an
-- app delete every grant and token of it; `expires_at` lets the sweeper forget rows.
CREATE TABLE oauth_records (
  model text NOT NULL,
  id text NOT NULL,
  payload text NOT NULL,
  grant_id text,
  uid text,
  user_code text,
  account_id text,
  client_id text,
  expires_at bigint,
  consumed_at bigint,
  PRIMARY KEY (model, id)
);
CREATE INDEX oauth_records_grant ON oauth_records (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_records_uid ON oauth_records (uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_records_user_code ON oauth_records (user_code) WHERE user_code IS NOT NULL;
CREATE INDEX oauth_records_app ON oauth_records (account_id, client_id) WHERE account_id IS NOT NULL;
CREATE INDEX oauth_records_expiry ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;

-- A connected app: what one account authorised one client to do. Its id is the `key_id` of the
-- receipts of calls made with its tokens. A revoked app's grants are deleted with it.
CREATE TABLE oauth_apps (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  client_id text NOT NULL,
  client_name text NOT NULL,
  redirect_host text NOT NULL,
  mounts text NOT NULL,
  grant_id text NOT NULL,
  created_at bigint NOT NULL,
  last_used_at bigint,
  revoked_at bigint
);
CREATE UNIQUE INDEX oauth_apps_live ON oauth_apps (account_id, client_id) WHERE revoked_at IS NULL;
CREATE INDEX oauth_apps_grant ON oauth_apps (grant_id);

-- The authorization server's signing key and cookie keys, made once by whichever instance starts
-- first, so every instance signs and reads the same.
CREATE TABLE oauth_keys (
  name text PRIMARY KEY,
  value text NOT NULL,
  created_at bigint NOT NULL
);
