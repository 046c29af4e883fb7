-- Money: checkout sessions on a payment rail, the purchases they (and subscription periods)
-- credit exactly once, subscriptions, and the Stripe objects and events the rail has seen.

-- One checkout. The `session_id` handed out is a random secret; only its hash is stored. A
-- keyless checkout's account gets its key at the first read after payment, which alone shows it.
CREATE TABLE checkout_sessions (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  account_id text REFERENCES accounts (id),
  pack text NOT NULL,
  rail text NOT NULL,
  status text NOT NULL CHECK (status IN ('open', 'paid', 'expired')),
  keyless boolean NOT NULL,
  key_revealed_at bigint,
  stripe_session_id text UNIQUE,
  expires_at bigint NOT NULL,
  paid_at bigint,
  created_at bigint NOT NULL
);
CREATE INDEX checkout_sessions_account ON checkout_sessions (account_id);

-- Every credited payment: a one-time pack or one paid subscription period. `payment_ref` names
-- the payment on its rail (the local session, a Stripe checkout session or invoice); its unique
-- constraint is what applies a payment once, however often and wherever it is reported.
CREATE TABLE purchases (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  pack text NOT NULL,
  rail text NOT NULL,
  payment_ref text NOT NULL UNIQUE,
  credits bigint NOT NULL,
  price_usd_cents integer NOT NULL,
  currency text NOT NULL,
  period_end bigint,
  created_at bigint NOT NULL
);
CREATE INDEX purchases_account ON purchases (account_id, created_at DESC);

CREATE TABLE subscriptions (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  pack text NOT NULL,
  rail text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'canceled')),
  cancel_at_period_end boolean NOT NULL DEFAULT false,
  current_period_end bigint NOT NULL,
  periods integer NOT NULL DEFAULT 1,
  stripe_subscription_id text UNIQUE,
  created_at bigint NOT NULL
);
CREATE UNIQUE INDEX subscriptions_one_active ON subscriptions (account_id) WHERE status = 'active';

CREATE TABLE stripe_customers (
  account_id text PRIMARY KEY REFERENCES accounts (id),
  customer_id text NOT NULL UNIQUE
);

-- Stripe webhook events already applied (each event id once).
CREATE TABLE stripe_events (
  id text PRIMARY KEY,
  type text NOT NULL,
  received_at bigint NOT NULL
);

-- The local billing portal: a short-lived single-account link, like Stripe's portal sessions.
CREATE TABLE portal_sessions (
  token_hash text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL
);
