-- Webhooks, automatic top-up and the key cap's event (issue 28).
--
-- Webhooks: an account's endpoints, the events queued for them (each written in the transaction of
-- the change that caused it, with one delivery per subscribed endpoint), and every delivery
-- attempt. A delivery is sent by whichever instance holds its endpoint's lease (`locked_until`,
-- `lease_token`), so an endpoint receives one request at a time, and no attempt is made twice at
-- once. The signing secret is kept encrypted (AES-256-GCM with WEBHOOK_SECRET_KEY), never in clear.
--
-- Automatic top-up: the account's settings and each top-up. The money rule arms a top-up in the
-- same transaction as the charge that brings the spendable credits below the line
-- (`svc_topup_arm`, called by `svc_settle` and `svc_charge_hits` in migrations/0013_money_rule.sql);
-- a worker then pays it. Never two open at once per account (a unique index), never past the
-- month's maximum (checked under the account's lock, which every arming holds). Lock order: the account, then its top-ups.

CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  url text NOT NULL,
  -- Comma-separated event types.
  events text NOT NULL,
  -- `v1:<key id>:<base64 of iv, tag and ciphertext>`: the secret as AES-256-GCM sealed it.
  secret_sealed text NOT NULL,
  state text NOT NULL CHECK (state IN ('active', 'disabled', 'deleted')),
  -- The first failed attempt since the last success: failing for 3 days disables the endpoint.
  failing_since bigint,
  disabled_at bigint,
  deleted_at bigint,
  locked_until bigint,
  lease_token text,
  created_at bigint NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id) WHERE state <> 'deleted';

-- One event: its body is written once and sent byte for byte on every attempt (`id` is the
-- `webhook-id` of every delivery of it).
CREATE TABLE webhook_events (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  type text NOT NULL,
  payload text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE webhook_deliveries (
  event_id text NOT NULL REFERENCES webhook_events (id),
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id),
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'canceled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  delivered_at bigint,
  created_at bigint NOT NULL,
  PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at)
  WHERE state = 'pending';

CREATE TABLE webhook_attempts (
  id text PRIMARY KEY,
  event_id text NOT NULL,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id),
  attempt integer NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
  response_code integer,
  -- The start of the receiver's answer, truncated.
  response_body text,
  error text,
  duration_ms integer NOT NULL,
  attempted_at bigint NOT NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at DESC, id DESC);

-- A capped key reached its cap in a period: the `key.cap_reached` event once per key, period and
-- cap (a raised cap that is reached again is a new event).
CREATE TABLE key_cap_events (
  key_id text NOT NULL REFERENCES api_keys (id),
  period text NOT NULL,
  spend_cap_credits bigint NOT NULL,
  reached_at bigint NOT NULL,
  PRIMARY KEY (key_id, period, spend_cap_credits)
);

-- An account's automatic top-up: the pack (its credits and price copied when armed), the line and
-- the month's maximum. `failures` counts failed top-ups in a row (3 disarm it); after a failure the
-- next top-up waits until `retry_at`.
CREATE TABLE topup_settings (
  account_id text PRIMARY KEY REFERENCES accounts (id),
  enabled boolean NOT NULL,
  pack text NOT NULL,
  credits bigint NOT NULL CHECK (credits > 0),
  price_usd_cents integer NOT NULL CHECK (price_usd_cents > 0),
  below_credits bigint NOT NULL CHECK (below_credits >= 1),
  monthly_max_usd_cents integer NOT NULL CHECK (monthly_max_usd_cents >= 0),
  failures integer NOT NULL DEFAULT 0,
  retry_at bigint,
  updated_at bigint NOT NULL
);

-- One top-up. `pending` until a worker pays it (local rail) or Stripe accepts the off-session
-- charge (`charging`, credited only on its verified webhook); then `succeeded` or `failed`.
-- `month` (UTC `YYYY-MM` of its arming) is the period of the maximum it was armed under.
CREATE TABLE topups (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  call_id text NOT NULL,
  month text NOT NULL,
  pack text NOT NULL,
  credits bigint NOT NULL,
  price_usd_cents integer NOT NULL,
  monthly_max_usd_cents integer NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'charging', 'succeeded', 'failed')),
  rail text,
  payment_ref text UNIQUE,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  locked_until bigint,
  lease_token text,
  error text,
  created_at bigint NOT NULL,
  settled_at bigint
);
-- Never two top-ups at once for an account, whichever instance arms them.
CREATE UNIQUE INDEX topups_one_open ON topups (account_id) WHERE state IN ('pending', 'charging');
CREATE INDEX topups_month ON topups (account_id, month);
CREATE INDEX topups_due ON topups (next_attempt_at) WHERE state = 'pending';

-- The automatic top-up rule, the one place it is decided: a charge of grant or balance that leaves
-- the spendable credits (grant plus balance, as the alert counts them) below the armed line arms
-- one top-up, unless one is open, a failure's wait is not over, or its price would take the
-- month's top-ups (open and succeeded) past the maximum. Called with the account locked (by
-- `svc_settle` and `svc_charge_hits`), which is what orders two armings. Returns the top-up's id
-- (named after the charge that armed it), or NULL.
CREATE FUNCTION svc_topup_arm(p_account text, p_call text, p_now bigint)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t record;
  v_month text := to_char(date '1970-01-01' + (p_now / 86400000)::integer, 'YYYY-MM');
  v_spent bigint;
  v_id text;
BEGIN
  SELECT s.credits, s.price_usd_cents, s.monthly_max_usd_cents, s.pack INTO t
    FROM topup_settings s JOIN accounts a ON a.id = s.account_id
    WHERE s.account_id = p_account AND s.enabled
      AND a.grant_credits + a.balance_credits < s.below_credits
      AND (s.retry_at IS NULL OR s.retry_at <= p_now);
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT COALESCE(SUM(u.price_usd_cents), 0) INTO v_spent FROM topups u
    WHERE u.account_id = p_account AND u.month = v_month AND u.state <> 'failed';
  IF v_spent + t.price_usd_cents > t.monthly_max_usd_cents THEN
    RETURN NULL;
  END IF;
  INSERT INTO topups (id, account_id, call_id, month, pack, credits, price_usd_cents, monthly_max_usd_cents,
      state, next_attempt_at, created_at)
    VALUES ('topup_' || substr(p_call, strpos(p_call, '_') + 1), p_account, p_call, v_month, t.pack, t.credits,
      t.price_usd_cents, t.monthly_max_usd_cents, 'pending', p_now, p_now)
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_id;
  RETURN v_id;
END
$$;
