-- Every function of the schema, each in its live text: the money rule (where a charge's credits
-- come from, when an account is busy, what a key's cap has left, when a charge crosses the balance
-- alert or arms a top-up, and the three moves of a metered call built on them: reserve, settle, and
-- a cache hit's one-statement charge), then the functions the triggers run. The service calls the
-- money rule's functions and translates their outcomes; it decides no split of its own. The
-- invariants they keep are in src/metering/README.md.
--
-- This file is not a numbered migration. The migrator applies it after them, in one transaction,
-- whenever its text is one it has not applied before (`svc_repeatable` keeps the hash of each text
-- applied; src/store/Database.ts). The numbered migrations keep the schema, and still create these
-- functions as they were then (a trigger needs its function to exist); this file redefines them
-- after, so what stands here is what runs. To change a function, change it here (and only here),
-- within the rule for instances that still run the older text: src/metering/README.md.

-- ==== The money rule

-- The period a charge on UTC day `p_day` counts toward, for a cap of `p_cap_period`.
CREATE OR REPLACE FUNCTION svc_period(p_cap_period text, p_day integer)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_cap_period
    WHEN 'day' THEN 'day:' || p_day
    WHEN 'month' THEN 'month:' || to_char(date '1970-01-01' + p_day, 'YYYY-MM')
    ELSE 'total' END
$$;

-- The funding order: `amount` credits from the free budget, then the grant, then the balance.
-- All three are NULL when the sources together cannot cover it (nothing is drawn then).
CREATE OR REPLACE FUNCTION svc_draw(amount bigint, free bigint, granted bigint, balance bigint,
  OUT from_free bigint, OUT from_grant bigint, OUT from_balance bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  from_free := LEAST(GREATEST(free, 0), amount);
  from_grant := LEAST(GREATEST(granted, 0), amount - from_free);
  from_balance := LEAST(GREATEST(balance, 0), amount - from_free - from_grant);
  IF from_free + from_grant + from_balance < amount THEN
    from_free := NULL;
    from_grant := NULL;
    from_balance := NULL;
  END IF;
END
$$;

-- The balance alert is armed while the spendable credits (grant plus balance) are at or above its
-- threshold (0: no alert). A charge crosses it when it was armed and no longer would be: its one
-- email goes out and it stays disarmed until credits added bring the spendable credits back up.
CREATE OR REPLACE FUNCTION svc_alert_armed(threshold bigint, spendable bigint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT threshold > 0 AND spendable >= threshold
$$;

CREATE OR REPLACE FUNCTION svc_alert_crossed(armed boolean, threshold bigint, spendable_after bigint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT armed AND NOT svc_alert_armed(threshold, spendable_after)
$$;

-- Credits added to an account's grant and balance (given back by a settlement, granted, bought),
-- re-arming the alert once they reach its threshold again. False: no such account.
CREATE OR REPLACE FUNCTION svc_add_credits(p_account text, p_grant bigint, p_balance bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts a SET grant_credits = a.grant_credits + p_grant, balance_credits = a.balance_credits + p_balance,
      alert_armed = a.alert_armed
        OR svc_alert_armed(a.alert_threshold, a.grant_credits + a.balance_credits + p_grant + p_balance)
    WHERE a.id = p_account;
  RETURN FOUND;
END
$$;

-- Whether the free per-IP budget counts for a call at all: only for a trial-plan account's
-- recent-data call while the free tier is open.
CREATE OR REPLACE FUNCTION svc_free_counts(p_plan text, p_realtime boolean, p_free_open boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT p_plan = 'trial' AND NOT p_realtime AND p_free_open
$$;

-- What the free budget has left, from the IP's use (`p_used`) and the day's (`p_global_used`): the
-- per-IP budget less the IP's use, within what the operator's global daily ceiling has left
-- (`p_global_free`, NULL for none), never below 0; 0 when it does not count (`svc_free_counts`).
-- An expression over its arguments (SQL, IMMUTABLE), so that a statement calling it has it inlined.
CREATE OR REPLACE FUNCTION svc_free_left_of(p_counts boolean, p_free_per_ip bigint, p_global_free bigint,
  p_used bigint, p_global_used bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_counts THEN GREATEST(0, CASE WHEN p_global_free IS NULL THEN p_free_per_ip - p_used
    ELSE LEAST(p_free_per_ip - p_used, p_global_free - p_global_used) END) ELSE 0 END
$$;

-- What the free per-IP budget has left for a call (`svc_free_left_of`), the IP's and the day's rows
-- read only when it counts (`svc_free_counts`). With `p_lock` those rows are locked (after the
-- account, which the caller has locked: the ledger's lock order), as a charge needs; without, they
-- are only read, as a report does. `global_exhausted`: the global ceiling cannot cover `p_amount`
-- from the free budget.
CREATE OR REPLACE FUNCTION svc_free_left(p_plan text, p_ip text, p_day integer, p_amount bigint, p_realtime boolean,
  p_free_per_ip bigint, p_free_open boolean, p_global_free bigint, p_lock boolean,
  OUT free_left bigint, OUT global_exhausted boolean)
LANGUAGE plpgsql AS $$
DECLARE
  used bigint;
  global_used bigint;
BEGIN
  free_left := 0;
  global_exhausted := false;
  IF NOT svc_free_counts(p_plan, p_realtime, p_free_open) THEN
    RETURN;
  END IF;
  IF p_lock THEN
    INSERT INTO free_tier_usage (ip, day, credits_used) VALUES (p_ip, p_day, 0) ON CONFLICT (ip, day) DO NOTHING;
    SELECT f.credits_used INTO used FROM free_tier_usage f WHERE f.ip = p_ip AND f.day = p_day FOR UPDATE;
    INSERT INTO free_tier_days (day, credits_used) VALUES (p_day, 0) ON CONFLICT (day) DO NOTHING;
    SELECT d.credits_used INTO global_used FROM free_tier_days d WHERE d.day = p_day FOR UPDATE;
  ELSE
    SELECT COALESCE((SELECT f.credits_used FROM free_tier_usage f WHERE f.ip = p_ip AND f.day = p_day), 0),
      COALESCE((SELECT d.credits_used FROM free_tier_days d WHERE d.day = p_day), 0)
      INTO used, global_used;
  END IF;
  free_left := svc_free_left_of(true, p_free_per_ip, p_global_free, used, global_used);
  IF p_global_free IS NOT NULL THEN
    global_exhausted := p_global_free - global_used < LEAST(p_amount, GREATEST(p_free_per_ip - used, 0));
  END IF;
END
$$;

-- The credits the next charge can spend: the free budget's left-over, the grant and the balance.
CREATE OR REPLACE FUNCTION svc_spendable(p_free_left bigint, p_grant bigint, p_balance bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT p_free_left + p_grant + p_balance
$$;

-- What a key's cap has left as it is reported: NULL without a cap, never below 0.
CREATE OR REPLACE FUNCTION svc_cap_reported(p_cap_left bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_cap_left IS NULL THEN NULL ELSE GREATEST(p_cap_left, 0) END
$$;

-- Whether and how `p_amount` credits are funded for an account: the free budget's left-over
-- (`svc_free_left`) drawn in the funding order (`svc_draw`). outcome: 'funded', or why not:
-- 'credits' (a paid plan, or a trial that ever had credits), 'budget' (the free tier is closed or
-- its global ceiling is spent), 'trial_cap' (this IP's free budget is spent). `spendable`: the
-- free budget's left-over plus grant and balance, what every report of credits left reads.
CREATE OR REPLACE FUNCTION svc_funding(p_account text, p_plan text, p_grant bigint, p_balance bigint, p_ip text,
  p_day integer, p_amount bigint, p_realtime boolean, p_free_per_ip bigint, p_free_open boolean,
  p_global_free bigint, p_lock boolean,
  OUT outcome text, OUT from_free bigint, OUT from_grant bigint, OUT from_balance bigint,
  OUT free_left bigint, OUT available bigint, OUT spendable bigint)
LANGUAGE plpgsql AS $$
DECLARE
  budget record;
  drawn record;
BEGIN
  budget := svc_free_left(p_plan, p_ip, p_day, p_amount, p_realtime, p_free_per_ip, p_free_open,
    p_global_free, p_lock);
  free_left := budget.free_left;
  drawn := svc_draw(p_amount, free_left, p_grant, p_balance);
  from_free := drawn.from_free;
  from_grant := drawn.from_grant;
  from_balance := drawn.from_balance;
  available := LEAST(free_left, p_amount) + p_grant + p_balance;
  spendable := svc_spendable(free_left, p_grant, p_balance);
  IF from_free IS NOT NULL THEN
    outcome := 'funded';
  ELSIF p_plan <> 'trial' OR EXISTS (SELECT 1 FROM credit_events e WHERE e.account_id = p_account) THEN
    outcome := 'credits';
  ELSIF NOT p_free_open OR budget.global_exhausted THEN
    outcome := 'budget';
  ELSE
    outcome := 'trial_cap';
  END IF;
END
$$;

-- The account's one call in flight, if any: when its lease ends and when it was last alive.
CREATE OR REPLACE FUNCTION svc_in_flight(p_account text, OUT lease_expires_at bigint, OUT seen bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT c.lease_expires_at, GREATEST(c.created_at, COALESCE(c.heartbeat_at, 0)) INTO lease_expires_at, seen
  FROM calls c WHERE c.account_id = p_account AND c.state = 'reserved' LIMIT 1;
END
$$;

-- What a key's cap has left in the period of `p_day`: the key's own cap or its parent's, whichever
-- has less left (`cap_key`, `cap_period`); no row when neither has a cap. One SELECT in SQL, so
-- that a statement reading it from FROM has it inlined into its own plan.
CREATE OR REPLACE FUNCTION svc_key_caps(p_key text, p_day integer)
RETURNS TABLE (cap_left bigint, cap_key text, cap_period text) LANGUAGE sql STABLE ROWS 1 AS $$
  SELECT k.spend_cap_credits - COALESCE(s.spent, 0), k.id, k.cap_period
  FROM api_keys own
  JOIN api_keys k ON k.id IN (own.id, own.parent_key_id) AND k.spend_cap_credits IS NOT NULL
  LEFT JOIN key_spend s ON s.key_id = k.id AND s.period = svc_period(k.cap_period, p_day)
  WHERE own.id = p_key
  ORDER BY 1, 2
  LIMIT 1
$$;

-- `svc_key_caps` as one row, of NULLs when neither the key nor its parent has a cap. Most keys have
-- no cap and no parent: their own row is read and nothing else (what a cache hit pays).
CREATE OR REPLACE FUNCTION svc_key_cap(p_key text, p_day integer,
  OUT cap_left bigint, OUT cap_key text, OUT cap_period text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  own record;
BEGIN
  SELECT k.spend_cap_credits, k.parent_key_id INTO own FROM api_keys k WHERE k.id = p_key;
  IF NOT FOUND OR (own.spend_cap_credits IS NULL AND own.parent_key_id IS NULL) THEN
    RETURN;
  END IF;
  SELECT c.cap_left, c.cap_key, c.cap_period INTO cap_left, cap_key, cap_period FROM svc_key_caps(p_key, p_day) c;
END
$$;

-- Counts `p_delta` credits (negative: given back) toward the caps of the key and its parent, each
-- in its cap's period; nothing for keys without a cap.
CREATE OR REPLACE FUNCTION svc_key_spend(p_key text, p_day integer, p_delta bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  own record;
BEGIN
  SELECT k.spend_cap_credits, k.parent_key_id INTO own FROM api_keys k WHERE k.id = p_key;
  IF NOT FOUND OR (own.spend_cap_credits IS NULL AND own.parent_key_id IS NULL) THEN
    RETURN;
  END IF;
  INSERT INTO key_spend (key_id, period, spent)
    SELECT k.id, svc_period(k.cap_period, p_day), GREATEST(p_delta, 0)
    FROM api_keys k
    WHERE k.id = ANY (ARRAY[p_key, own.parent_key_id])
      AND k.spend_cap_credits IS NOT NULL
  ON CONFLICT (key_id, period) DO UPDATE SET spent = GREATEST(key_spend.spent + p_delta, 0);
END
$$;

-- A key's spend in the period of `p_day` from its calls (and its children's), for a cap just set
-- or changed: the counter starts from what the key has really spent in that period.
CREATE OR REPLACE FUNCTION svc_key_spent(p_key text, p_cap_period text, p_day integer)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT COALESCE(SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END), 0)::bigint
  FROM calls c
  WHERE c.account_id = (SELECT k.account_id FROM api_keys k WHERE k.id = p_key)
    AND c.state IN ('reserved', 'settled')
    AND (c.key_id = p_key OR c.key_id IN (SELECT k.id FROM api_keys k WHERE k.parent_key_id = p_key))
    AND svc_period(p_cap_period, c.day) = svc_period(p_cap_period, p_day)
$$;

-- Takes what `svc_funding` found from the free-tier rows and the account (both already locked).
CREATE OR REPLACE FUNCTION svc_take(p_account text, p_ip text, p_day integer, p_free bigint, p_grant bigint, p_balance bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_free > 0 THEN
    UPDATE free_tier_usage SET credits_used = credits_used + p_free WHERE ip = p_ip AND day = p_day;
    UPDATE free_tier_days SET credits_used = credits_used + p_free WHERE day = p_day;
  END IF;
  IF p_grant + p_balance > 0 THEN
    UPDATE accounts SET grant_credits = grant_credits - p_grant, balance_credits = balance_credits - p_balance
      WHERE id = p_account;
  END IF;
END
$$;

-- The automatic top-up rule, the one place it is decided: a charge of grant or balance that leaves
-- the spendable credits (grant plus balance, as the alert counts them) below the armed line arms
-- one top-up, unless one is open, a failure's wait is not over, or its price would take the
-- month's top-ups (open and succeeded) past the maximum. Called with the account locked (by
-- `svc_settle` and `svc_charge_hits`), which is what orders two armings. Returns the top-up's id
-- (named after the charge that armed it), or NULL.
CREATE OR REPLACE FUNCTION svc_topup_arm(p_account text, p_call text, p_now bigint)
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

-- What is left as the next charge finds it: the spendable credits (`svc_funding`'s) and what the
-- key's cap has (NULL for a key without a cap, never below 0). What the headers, the settlement's
-- report and `GET /v1/usage` (src/services/Usage.ts) read.
CREATE OR REPLACE FUNCTION svc_remaining(p_account text, p_key text, p_ip text, p_day integer, p_terms jsonb,
  OUT spendable bigint, OUT cap_left bigint)
LANGUAGE plpgsql AS $$
DECLARE
  acct record;
  f record;
BEGIN
  SELECT a.plan, a.grant_credits, a.balance_credits INTO acct FROM accounts a WHERE a.id = p_account;
  SELECT * INTO f FROM svc_funding(p_account, acct.plan, acct.grant_credits, acct.balance_credits, p_ip, p_day, 0,
    false, (p_terms->>'free_per_ip')::bigint, (p_terms->>'free_open')::boolean, (p_terms->>'global_free')::bigint,
    false);
  spendable := f.spendable;
  SELECT svc_cap_reported(k.cap_left) INTO cap_left FROM svc_key_cap(p_key, p_day) k;
END
$$;

-- What `GET /v1/usage` (src/services/Usage.ts) reports of the free budget, for an account whose
-- plan it can count for (`svc_free_counts` with the tier open): the IP's use today, what is left
-- (`svc_free_left_of`) and the spendable credits with it (`svc_spendable`), as JSON. A function, called
-- by the usage statement only for such an account, so that no other account's request pays for
-- the free-use rows' reads in that statement's plan.
CREATE OR REPLACE FUNCTION svc_usage_free(p_plan text, p_grant bigint, p_balance bigint, p_ip text,
  p_day integer, p_free_per_ip bigint, p_free_open boolean, p_global_free bigint)
RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  used bigint;
  left_over bigint;
BEGIN
  SELECT f.credits_used INTO used FROM free_tier_usage f WHERE f.ip = p_ip AND f.day = p_day;
  left_over := svc_free_left_of(svc_free_counts(p_plan, false, p_free_open), p_free_per_ip, p_global_free,
    COALESCE(used, 0), COALESCE((SELECT d.credits_used FROM free_tier_days d WHERE d.day = p_day), 0));
  RETURN json_build_object('used', used, 'free_left', left_over,
    'spendable', svc_spendable(left_over, p_grant, p_balance));
END
$$;

-- What `GET /v1/usage` reports of a key's cap, as JSON: the tightest cap's remainder as the charge
-- finds it (`svc_key_cap`, `svc_cap_reported`), the key's own cap, its period and its spend in it;
-- NULL for a key with neither a cap nor a parent (most keys: their own row is read and nothing
-- else, as in `svc_key_cap`) or not of `p_account`.
CREATE OR REPLACE FUNCTION svc_usage_key(p_account text, p_key text, p_day integer)
RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  own record;
BEGIN
  SELECT k.spend_cap_credits, k.parent_key_id, k.cap_period INTO own FROM api_keys k
    WHERE k.id = p_key AND k.account_id = p_account;
  IF NOT FOUND OR (own.spend_cap_credits IS NULL AND own.parent_key_id IS NULL) THEN
    RETURN NULL;
  END IF;
  RETURN json_build_object('cap_left', svc_cap_reported((svc_key_cap(p_key, p_day)).cap_left),
    'spend_cap_credits', own.spend_cap_credits, 'cap_period', own.cap_period,
    'spent_in_period', CASE WHEN own.spend_cap_credits IS NOT NULL THEN COALESCE((SELECT s.spent
      FROM key_spend s WHERE s.key_id = p_key AND s.period = svc_period(own.cap_period, p_day)), 0) END);
END
$$;

-- Reserves a call's whole quote and takes the account's one in-flight slot, in one transaction.
-- outcome: 'reserved'; 'account' (no such account); 'expired' (the slot is held by a call whose
-- lease has passed: the caller refunds it and asks again with p_after_sweep); 'busy' (another call
-- holds the slot: holder_lease and holder_seen say when it ends and when it was last alive);
-- 'key_cap' (the quote is above what the key's cap, or its parent's, has left: cap_left and
-- cap_period); or the funding's refusal ('credits', 'budget', 'trial_cap', with free_left and
-- available).
CREATE OR REPLACE FUNCTION svc_reserve(p jsonb)
RETURNS TABLE (outcome text, free_left bigint, available bigint, holder_lease bigint, holder_seen bigint,
  cap_left bigint, cap_period text, reserved_free bigint, reserved_grant bigint, reserved_balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
  acct record;
  holder record;
  cap record;
  f record;
  v_account text := p->>'account_id';
  v_key text := p->>'key_id';
  v_day integer := (p->>'day')::integer;
  v_quoted bigint := (p->>'quoted')::bigint;
  v_now bigint := (p->>'now')::bigint;
BEGIN
  SELECT a.plan, a.grant_credits, a.balance_credits INTO acct FROM accounts a WHERE a.id = v_account FOR UPDATE;
  IF NOT FOUND THEN
    outcome := 'account';
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT * INTO holder FROM svc_in_flight(v_account);
  IF holder.lease_expires_at IS NOT NULL THEN
    outcome := CASE WHEN holder.lease_expires_at <= v_now AND NOT (p->>'after_sweep')::boolean
      THEN 'expired' ELSE 'busy' END;
    holder_lease := holder.lease_expires_at;
    holder_seen := holder.seen;
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT * INTO cap FROM svc_key_cap(v_key, v_day);
  IF cap.cap_left IS NOT NULL AND cap.cap_left < v_quoted THEN
    outcome := 'key_cap';
    cap_left := GREATEST(cap.cap_left, 0);
    cap_period := cap.cap_period;
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT * INTO f FROM svc_funding(v_account, acct.plan, acct.grant_credits, acct.balance_credits, p->>'ip',
    v_day, v_quoted, (p->>'realtime')::boolean, (p->>'free_per_ip')::bigint,
    (p->>'free_open')::boolean, (p->>'global_free')::bigint, true);
  outcome := f.outcome;
  free_left := f.free_left;
  available := f.available;
  IF f.outcome <> 'funded' THEN
    RETURN NEXT;
    RETURN;
  END IF;
  PERFORM svc_take(v_account, p->>'ip', v_day, f.from_free, f.from_grant, f.from_balance);
  PERFORM svc_key_spend(v_key, v_day, v_quoted);
  INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted, reserved_free, reserved_grant,
      reserved_balance, idempotency_key, lease_expires_at, created_at)
    VALUES (p->>'call_id', v_account, v_key, p->>'operation', 'reserved', p->>'ip', v_day,
      v_quoted, f.from_free, f.from_grant, f.from_balance, p->>'idempotency_key',
      v_now + (p->>'lease_ms')::bigint, v_now);
  outcome := 'reserved';
  reserved_free := f.from_free;
  reserved_grant := f.from_grant;
  reserved_balance := f.from_balance;
  RETURN NEXT;
END
$$;

-- Ends a reserved call: `p_charged` (at most the quote) is charged in the funding order from what
-- was reserved, the rest goes back where it came from (and off the key's cap). The call's state
-- guards against ending it twice: no row when it was no longer reserved (its lease expired and it
-- was refunded). A charge of grant or balance arms the automatic top-up when it brings the
-- spendable credits below its line (`svc_topup_arm`, reported as `topup_id`). A charge of grant or
-- balance that crosses the armed balance alert disarms it and reports the crossing (the caller
-- queues its one email in the same transaction). Released, when nothing was charged and nothing
-- refunded. Lock order: the account, then the call, then the free-tier rows. With `p_terms`, what
-- is left is reported too (`svc_remaining`).
CREATE OR REPLACE FUNCTION svc_settle(p_call text, p_charged bigint, p_refunds text, p_now bigint, p_terms jsonb)
RETURNS TABLE (call jsonb, alert_email text, alert_threshold bigint, alert_spendable bigint,
  spendable bigint, cap_left bigint, topup_id text)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  s record;
  back_free bigint;
  back_grant bigint;
  back_balance bigint;
  ended calls;
  crossing record;
  left_over record;
BEGIN
  SELECT c.account_id, c.key_id, c.ip, c.day, c.reserved_free, c.reserved_grant, c.reserved_balance INTO r
    FROM calls c WHERE c.id = p_call AND c.state = 'reserved';
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT * INTO s FROM svc_draw(LEAST(GREATEST(p_charged, 0), r.reserved_free + r.reserved_grant + r.reserved_balance),
    r.reserved_free, r.reserved_grant, r.reserved_balance);
  back_free := r.reserved_free - s.from_free;
  back_grant := r.reserved_grant - s.from_grant;
  back_balance := r.reserved_balance - s.from_balance;
  IF r.reserved_grant + r.reserved_balance > 0 THEN
    PERFORM 1 FROM accounts a WHERE a.id = r.account_id FOR UPDATE;
  END IF;
  UPDATE calls c SET state = CASE WHEN p_charged = 0 AND p_refunds = '[]' THEN 'released' ELSE 'settled' END,
      charged = s.from_free + s.from_grant + s.from_balance, charged_free = s.from_free,
      charged_grant = s.from_grant, charged_balance = s.from_balance, refunds = p_refunds, settled_at = p_now
    WHERE c.id = p_call AND c.state = 'reserved' RETURNING c.* INTO ended;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF back_free > 0 THEN
    UPDATE free_tier_usage f SET credits_used = f.credits_used - back_free WHERE f.ip = r.ip AND f.day = r.day;
    UPDATE free_tier_days d SET credits_used = d.credits_used - back_free WHERE d.day = r.day;
  END IF;
  IF back_grant + back_balance > 0 THEN
    PERFORM svc_add_credits(r.account_id, back_grant, back_balance);
  END IF;
  IF back_free + back_grant + back_balance > 0 THEN
    PERFORM svc_key_spend(r.key_id, r.day, -(back_free + back_grant + back_balance));
  END IF;
  IF s.from_grant + s.from_balance > 0 THEN
    UPDATE accounts a SET alert_armed = false
      WHERE a.id = r.account_id AND svc_alert_crossed(a.alert_armed, a.alert_threshold, a.grant_credits + a.balance_credits)
      RETURNING a.email, a.alert_threshold, a.grant_credits + a.balance_credits AS spendable INTO crossing;
    IF FOUND THEN
      alert_email := crossing.email;
      alert_threshold := crossing.alert_threshold;
      alert_spendable := crossing.spendable;
    END IF;
    topup_id := svc_topup_arm(r.account_id, p_call, p_now);
  END IF;
  IF p_terms IS NOT NULL THEN
    SELECT * INTO left_over FROM svc_remaining(r.account_id, r.key_id, r.ip, r.day, p_terms);
    spendable := left_over.spendable;
    cap_left := left_over.cap_left;
  END IF;
  call := to_jsonb(ended);
  RETURN NEXT;
END
$$;

-- A metered cache hit in one statement: its data is in hand before any credit moves, so the charge,
-- the receipt (the settled call) and the stored idempotent result commit together, without a
-- reservation. Several calls (of any accounts) are charged by one call of the function and share
-- one commit (group commit). An item is charged only in the plain case; otherwise it changes
-- nothing and answers why, and the caller takes the full path, which decides it: 'account' (no
-- such account, or suspended), 'identity' (the key or account changed since the caller's memory
-- read them: items with versions only), 'busy' (a call in flight), 'key_cap' (above the key's cap),
-- 'credits' (not funded), 'alert' (the charge would cross the armed balance alert, whose email the
-- full path queues), 'key' (the Idempotency-Key is already used). Lock order: every account of the
-- batch first, one by one in id order. A charged item counts toward the caps only when its key or
-- parent has one, arms the automatic top-up as `svc_settle` does and reports what is left. The
-- batch's receipts are inserted in one statement after the loop (nothing in it reads them).
CREATE OR REPLACE FUNCTION svc_charge_hits(batch jsonb)
RETURNS TABLE (call_id text, outcome text, call jsonb, spendable bigint, cap_left bigint, topup_id text)
LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
  acct record;
  cap record;
  f record;
  v_call text;
  v_account text;
  v_key text;
  v_day integer;
  v_amount bigint;
  v_now bigint;
  charged calls;
  receipts calls[] := ARRAY[]::calls[];
BEGIN
  FOR v_account IN SELECT DISTINCT x->>'account_id' FROM jsonb_array_elements(batch) x ORDER BY 1 LOOP
    PERFORM 1 FROM accounts a WHERE a.id = v_account FOR UPDATE;
  END LOOP;
  FOR item IN SELECT x FROM jsonb_array_elements(batch) x ORDER BY x->>'account_id' LOOP
    v_call := item->>'call_id';
    v_account := item->>'account_id';
    v_key := item->>'key_id';
    v_day := (item->>'day')::integer;
    v_amount := (item->>'charged')::bigint;
    v_now := (item->>'now')::bigint;
    call_id := v_call;
    call := NULL;
    spendable := NULL;
    cap_left := NULL;
    topup_id := NULL;
    SELECT a.plan, a.state, a.grant_credits, a.balance_credits, a.alert_armed, a.alert_threshold, a.identity_version
      INTO acct FROM accounts a WHERE a.id = v_account;
    IF NOT FOUND OR acct.state <> 'active' THEN
      outcome := 'account';
    ELSIF item->>'account_version' IS NOT NULL AND (acct.identity_version <> (item->>'account_version')::bigint
        OR (SELECT k.identity_version FROM api_keys k WHERE k.id = v_key) IS DISTINCT FROM (item->>'key_version')::bigint) THEN
      outcome := 'identity';
    ELSIF (svc_in_flight(v_account)).lease_expires_at IS NOT NULL THEN
      outcome := 'busy';
    ELSE
      cap := svc_key_cap(v_key, v_day);
      IF cap.cap_left IS NOT NULL AND cap.cap_left < v_amount THEN
        outcome := 'key_cap';
      ELSE
        f := svc_funding(v_account, acct.plan, acct.grant_credits, acct.balance_credits,
          item->>'ip', v_day, v_amount, false, (item->>'free_per_ip')::bigint,
          (item->>'free_open')::boolean, (item->>'global_free')::bigint, true);
        IF f.outcome <> 'funded' THEN
          outcome := 'credits';
        ELSIF f.from_grant + f.from_balance > 0 AND svc_alert_crossed(acct.alert_armed, acct.alert_threshold,
            acct.grant_credits + acct.balance_credits - f.from_grant - f.from_balance) THEN
          outcome := 'alert';
        ELSE
          INSERT INTO idempotency_keys (account_id, idem_key, fingerprint, state, owner, call_id, response,
              lease_expires_at, replay_until, tombstone_until, created_at)
            VALUES (v_account, item->>'idempotency_key', item->>'fingerprint', 'done', v_call, v_call,
              item->>'response', v_now, (item->>'replay_until')::bigint, (item->>'tombstone_until')::bigint, v_now)
            ON CONFLICT DO NOTHING;
          IF NOT FOUND THEN
            outcome := 'key';
          ELSE
            PERFORM svc_take(v_account, item->>'ip', v_day, f.from_free, f.from_grant, f.from_balance);
            IF cap.cap_key IS NOT NULL THEN
              PERFORM svc_key_spend(v_key, v_day, v_amount);
            END IF;
            charged := ROW(v_call, v_account, v_key, item->>'operation', 'settled', item->>'ip',
                v_day, (item->>'quoted')::integer, f.from_free, f.from_grant, f.from_balance,
                v_amount, f.from_free, f.from_grant, f.from_balance, item->>'refunds', item->>'idempotency_key',
                v_now, v_now, v_now, NULL)::calls;
            receipts := receipts || charged;
            IF f.from_grant + f.from_balance > 0 THEN
              topup_id := svc_topup_arm(v_account, v_call, v_now);
            END IF;
            outcome := 'charged';
            call := to_jsonb(charged);
            spendable := f.spendable - v_amount;
            cap_left := cap.cap_left - v_amount;
          END IF;
        END IF;
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
  INSERT INTO calls SELECT * FROM unnest(receipts);
END
$$;

-- ==== The triggers' functions (the triggers themselves are in the numbered migrations)

-- A settled call counts itself into its account's day (`usage_days`): per row, for the full
-- path's settling UPDATE (trigger `calls_usage_settling`) ...
CREATE OR REPLACE FUNCTION svc_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_days AS u (account_id, day, credits, calls) VALUES (NEW.account_id, NEW.day, NEW.charged, 1)
    ON CONFLICT (account_id, day) DO UPDATE SET credits = u.credits + EXCLUDED.credits, calls = u.calls + 1;
  RETURN NULL;
END
$$;

-- ... and per INSERT statement, from its transition table, for a cache hit's batch of receipts
-- (trigger `calls_usage_settled`).
CREATE OR REPLACE FUNCTION svc_usage_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_days AS u (account_id, day, credits, calls)
    SELECT n.account_id, n.day, SUM(n.charged), COUNT(*) FROM inserted n WHERE n.state = 'settled'
    GROUP BY n.account_id, n.day ORDER BY n.account_id, n.day
    ON CONFLICT (account_id, day) DO UPDATE SET credits = u.credits + EXCLUDED.credits, calls = u.calls + EXCLUDED.calls;
  RETURN NULL;
END
$$;

-- Identity from memory: every instance keeps spend keys' accounts in memory and forgets an account
-- when a trigger reports a change that matters to authentication. NOTIFY is delivered at commit to
-- every listening instance. These two report a deleted account or key (`*_identity_gone`) ...
CREATE OR REPLACE FUNCTION svc_notify_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_identity', OLD.id);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION svc_notify_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_identity', OLD.account_id);
  RETURN NULL;
END
$$;

-- ... and these two a changed one (`accounts_identity`, `api_keys_identity`, BEFORE the update):
-- they bump the row's version, which a cache hit's charge compares with the one the caller's
-- memory read (`svc_charge_hits`, outcome 'identity'), and report it.
CREATE OR REPLACE FUNCTION svc_account_identity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.identity_version := OLD.identity_version + 1;
  PERFORM pg_notify('svc_identity', OLD.id);
  RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION svc_key_identity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.identity_version := OLD.identity_version + 1;
  PERFORM pg_notify('svc_identity', OLD.account_id);
  RETURN NEW;
END
$$;

-- A parent's version moved (the trigger above): its children's move with it. The account's report
-- was sent by the parent's own trigger (one account), so every instance forgets the children too.
CREATE OR REPLACE FUNCTION svc_key_children_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE api_keys SET identity_version = identity_version + 1 WHERE parent_key_id = NEW.id;
  RETURN NULL;
END
$$;
