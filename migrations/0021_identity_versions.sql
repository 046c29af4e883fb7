-- A remembered spend key checked by the cache hit's own statement. Every instance keeps spend keys'
-- accounts in memory (migrations/0008); until now a remembered key was used only after a round
-- trip on the listening session that proved every report committed before the request applied.
-- Now an account and a key carry a version, bumped by every change that matters to
-- authentication, in the same trigger that reports it; a hit's principal taken from memory carries
-- the versions it was read at, and `svc_charge_hits` charges it only if both are still current
-- (outcome 'identity' otherwise: nothing is written, and the service reads the key again). Every
-- other answer still waits for the round trip first (src/metering/meterDataCall.ts).
--
-- The triggers that report a change now run BEFORE the update, so one trigger both bumps the
-- version and reports it (a notification is sent at commit either way), and the list of columns
-- that matter stays written once. A deleted key or account has no row to compare: the hit's lookup
-- finds none and declines.

ALTER TABLE accounts ADD COLUMN identity_version bigint NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN identity_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION svc_account_identity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.identity_version := OLD.identity_version + 1;
  PERFORM pg_notify('svc_identity', OLD.id);
  RETURN NEW;
END
$$;

CREATE FUNCTION svc_key_identity_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.identity_version := OLD.identity_version + 1;
  PERFORM pg_notify('svc_identity', OLD.account_id);
  RETURN NEW;
END
$$;

DROP TRIGGER accounts_identity ON accounts;
CREATE TRIGGER accounts_identity
  BEFORE UPDATE OF plan, state, entitlements, email, claimed_at, alert_threshold ON accounts FOR EACH ROW
  WHEN (OLD.plan IS DISTINCT FROM NEW.plan OR OLD.state IS DISTINCT FROM NEW.state
    OR OLD.entitlements IS DISTINCT FROM NEW.entitlements OR OLD.email IS DISTINCT FROM NEW.email
    OR OLD.claimed_at IS DISTINCT FROM NEW.claimed_at OR OLD.alert_threshold IS DISTINCT FROM NEW.alert_threshold)
  EXECUTE FUNCTION svc_account_identity_changed();

DROP TRIGGER api_keys_identity ON api_keys;
CREATE TRIGGER api_keys_identity
  BEFORE UPDATE OF revoked_at, account_id, secret_hash, expires_at, platforms, spend_cap_credits, cap_period
  ON api_keys FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.account_id IS DISTINCT FROM NEW.account_id
    OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
    OR OLD.platforms IS DISTINCT FROM NEW.platforms OR OLD.spend_cap_credits IS DISTINCT FROM NEW.spend_cap_credits
    OR OLD.cap_period IS DISTINCT FROM NEW.cap_period)
  EXECUTE FUNCTION svc_key_identity_changed();

-- The same function as migrations/0020's, with the versions' check after the account's state
-- (items without versions, from a principal read from the database, skip it).
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
