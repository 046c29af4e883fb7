-- Two lookups of a cache hit's charge that cost more than the rest of it, measured with
-- `track_functions = 'all'` on PostgreSQL (the bench's cache-hit load, and a batch of one hit per
-- account in a loop). Same signatures, same results, same locks in the same order.
--
-- 1. `svc_charge_hits` locked its batch's accounts with `a.id IN (SELECT ... jsonb_array_elements)`,
--    which the planner (a hundred rows assumed for the array) ran as a hash join over a sequential
--    scan of every account: a hit's cost grew with the number of accounts, and at moderate load,
--    where a batch is one to three hits, each hit paid the scan (the function's own time 236-312 µs
--    a hit with 1,000 accounts; 103-160 µs with the index). Now `= ANY (ARRAY(...))`: the primary
--    key's index, whatever the number of accounts.
-- 2. Most keys have no spend cap and no parent: for them the key's caps are none, and nothing is
--    counted toward a cap. svc_key_cap took 116 µs a call and svc_key_spend 41 µs under load (their
--    array of the key and its parent, its join and its sort). Both now read the key's own row first
--    (its primary key) and stop there when neither it nor a parent can hold a cap (21 and 13 µs).

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
  SELECT k.spend_cap_credits - COALESCE(s.spent, 0), k.id, k.cap_period INTO cap_left, cap_key, cap_period
  FROM api_keys k
  LEFT JOIN key_spend s ON s.key_id = k.id AND s.period = svc_period(k.cap_period, p_day)
  WHERE k.id = ANY (ARRAY[p_key, own.parent_key_id])
    AND k.spend_cap_credits IS NOT NULL
  ORDER BY 1, 2
  LIMIT 1;
END
$$;

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
BEGIN
  PERFORM 1 FROM accounts a
    WHERE a.id = ANY (ARRAY(SELECT x->>'account_id' FROM jsonb_array_elements(batch) x))
    ORDER BY a.id FOR UPDATE;
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
    ELSIF (SELECT h.lease_expires_at FROM svc_in_flight(v_account) h) IS NOT NULL THEN
      outcome := 'busy';
    ELSE
      SELECT * INTO cap FROM svc_key_cap(v_key, v_day);
      IF cap.cap_left IS NOT NULL AND cap.cap_left < v_amount THEN
        outcome := 'key_cap';
      ELSE
        SELECT * INTO f FROM svc_funding(v_account, acct.plan, acct.grant_credits, acct.balance_credits,
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
            PERFORM svc_key_spend(v_key, v_day, v_amount);
            INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted, reserved_free,
                reserved_grant, reserved_balance, charged, charged_free, charged_grant, charged_balance, refunds,
                idempotency_key, lease_expires_at, created_at, settled_at)
              VALUES (v_call, v_account, v_key, item->>'operation', 'settled', item->>'ip',
                v_day, (item->>'quoted')::integer, f.from_free, f.from_grant, f.from_balance,
                v_amount, f.from_free, f.from_grant, f.from_balance, item->>'refunds', item->>'idempotency_key',
                v_now, v_now, v_now)
              RETURNING * INTO charged;
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
END
$$;
