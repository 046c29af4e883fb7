-- A cache hit's charge in fewer statements, measured with a batch of 16 hits replayed by pgbench
-- against a copy of a bench database (PostgreSQL's CPU a hit, the batch's own making subtracted):
--
-- * The batch locks its accounts one by one by primary key, in id order as before. One statement
--   with `id = ANY (ARRAY(...))` was planned, without statistics (autovacuum off, or a table not yet
--   analyzed), as a scan of every account that compared each with every id of the batch: its cost
--   grew with the number of accounts (2,000 accounts: ~25 µs a hit).
-- * The batch's receipts are inserted in one statement after its loop rather than one statement a
--   hit: an INSERT's set-up (the table's CHECK constraint read from the catalog's text, its partial
--   indexes' predicates, its triggers) is paid once a batch (~30 µs a hit). Nothing in the loop reads
--   the settled receipts of the batch's own calls (in-flight reads reservations; caps, free tier and
--   top-ups have their own tables), so inserting them after it changes no outcome; a failed insert
--   still fails the whole batch.
-- * A settled call counts itself into `usage_days` once per INSERT statement, from its transition
--   table, rather than once per row (the settling UPDATE of the full path still counts per row: a
--   trigger with a column list cannot have transition tables).
-- * The helpers a hit calls for one value or one row (in-flight, key cap, funding, and funding's
--   free tier and draw) are called in PL/pgSQL expressions (`cap := svc_key_cap(...)`) rather than
--   as `SELECT * INTO ... FROM helper(...)`: PL/pgSQL evaluates such an expression without starting
--   the executor for a query with a function scan and a tuplestore (~20 µs a hit). The helpers and
--   what they return are unchanged.
-- * `accounts_identity` and `api_keys_identity` fire only for updates that name one of the columns
--   their WHEN compares: a charge's `UPDATE accounts SET grant_credits, balance_credits` no longer
--   reads the WHEN's text from the catalog and evaluates it (~15 µs a hit). What they report is the
--   same: the WHEN still compares old and new.

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
    SELECT a.plan, a.state, a.grant_credits, a.balance_credits, a.alert_armed, a.alert_threshold
      INTO acct FROM accounts a WHERE a.id = v_account;
    IF NOT FOUND OR acct.state <> 'active' THEN
      outcome := 'account';
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

CREATE OR REPLACE FUNCTION svc_usage_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_days AS u (account_id, day, credits, calls)
    SELECT n.account_id, n.day, SUM(n.charged), COUNT(*) FROM inserted n WHERE n.state = 'settled'
    GROUP BY n.account_id, n.day ORDER BY n.account_id, n.day
    ON CONFLICT (account_id, day) DO UPDATE SET credits = u.credits + EXCLUDED.credits, calls = u.calls + EXCLUDED.calls;
  RETURN NULL;
END
$$;

DROP TRIGGER calls_usage_settled ON calls;
CREATE TRIGGER calls_usage_settled AFTER INSERT ON calls REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION svc_usage_count_inserted();

DROP TRIGGER accounts_identity ON accounts;
CREATE TRIGGER accounts_identity
  AFTER UPDATE OF plan, state, entitlements, email, claimed_at, alert_threshold ON accounts FOR EACH ROW
  WHEN (OLD.plan IS DISTINCT FROM NEW.plan OR OLD.state IS DISTINCT FROM NEW.state
    OR OLD.entitlements IS DISTINCT FROM NEW.entitlements OR OLD.email IS DISTINCT FROM NEW.email
    OR OLD.claimed_at IS DISTINCT FROM NEW.claimed_at OR OLD.alert_threshold IS DISTINCT FROM NEW.alert_threshold)
  EXECUTE FUNCTION svc_notify_account();

DROP TRIGGER api_keys_identity ON api_keys;
CREATE TRIGGER api_keys_identity
  AFTER UPDATE OF revoked_at, account_id, secret_hash, expires_at, platforms, spend_cap_credits, cap_period
  ON api_keys FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.account_id IS DISTINCT FROM NEW.account_id
    OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
    OR OLD.platforms IS DISTINCT FROM NEW.platforms OR OLD.spend_cap_credits IS DISTINCT FROM NEW.spend_cap_credits
    OR OLD.cap_period IS DISTINCT FROM NEW.cap_period)
  EXECUTE FUNCTION svc_notify_key();

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
  spendable := free_left + p_grant + p_balance;
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
