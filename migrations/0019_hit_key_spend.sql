-- A cache hit's charge counts its credits toward the caps of its key and the key's parent only when
-- one of them has a cap: `svc_key_cap` has just read both keys' rows and found none or the one with
-- least left, and `svc_key_spend` counts toward exactly those (`spend_cap_credits IS NOT NULL`), so
-- when `cap_key` is NULL it would read the key's row again to do nothing. Most keys have no cap:
-- one function call and one lookup less a hit. The full path still calls it (its reservation and
-- its settlement each count, the settlement giving back what the reservation counted).

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
            IF cap.cap_key IS NOT NULL THEN
              PERFORM svc_key_spend(v_key, v_day, v_amount);
            END IF;
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
