-- Identity from memory: every instance keeps spend keys' accounts in memory and forgets an account
-- when one of these triggers reports a change that matters to authentication (revocation, a new
-- owner, suspension, plan, entitlements). NOTIFY is delivered at commit to every listening instance.
CREATE FUNCTION svc_notify_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_identity', OLD.id);
  RETURN NULL;
END
$$;

CREATE TRIGGER accounts_identity AFTER UPDATE ON accounts FOR EACH ROW
  WHEN (OLD.plan IS DISTINCT FROM NEW.plan OR OLD.state IS DISTINCT FROM NEW.state
    OR OLD.entitlements IS DISTINCT FROM NEW.entitlements OR OLD.email IS DISTINCT FROM NEW.email
    OR OLD.claimed_at IS DISTINCT FROM NEW.claimed_at OR OLD.alert_threshold IS DISTINCT FROM NEW.alert_threshold)
  EXECUTE FUNCTION svc_notify_account();

CREATE TRIGGER accounts_identity_gone AFTER DELETE ON accounts FOR EACH ROW
  EXECUTE FUNCTION svc_notify_account();

CREATE FUNCTION svc_notify_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('svc_identity', OLD.account_id);
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_identity AFTER UPDATE ON api_keys FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.account_id IS DISTINCT FROM NEW.account_id
    OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash)
  EXECUTE FUNCTION svc_notify_key();

CREATE TRIGGER api_keys_identity_gone AFTER DELETE ON api_keys FOR EACH ROW
  EXECUTE FUNCTION svc_notify_key();

-- A metered cache hit of a paid account in one statement: the data is in hand before any credit
-- moves, so the charge, the receipt and the stored idempotent result commit together, without a
-- reservation. Several calls (of any accounts) are charged in one call of the function, so they
-- share one commit (group commit). Each item is charged only in the plain case; anything else
-- (unknown, trial or suspended account, a call in flight on the account, not enough credits, a
-- balance alert this charge would cross, an Idempotency-Key already used) changes nothing for
-- that item and answers why, and the caller takes the full path, which decides it.
-- Lock order: every account of the batch first, in id order, as a reservation locks its account first.
CREATE FUNCTION svc_charge_hits(batch jsonb)
RETURNS TABLE (call_id text, outcome text, from_grant bigint, from_balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
  acct record;
  charge bigint;
  funding text;
  cid text;
BEGIN
  PERFORM 1 FROM accounts a
    WHERE a.id IN (SELECT x->>'account_id' FROM jsonb_array_elements(batch) x)
    ORDER BY a.id FOR UPDATE;
  FOR item IN SELECT x FROM jsonb_array_elements(batch) x ORDER BY x->>'account_id' LOOP
    cid := item->>'id';
    call_id := cid;
    from_grant := 0;
    from_balance := 0;
    charge := (item->>'charged')::bigint;
    SELECT a.plan, a.state, a.grant_credits, a.balance_credits, a.alert_armed, a.alert_threshold
      INTO acct FROM accounts a WHERE a.id = item->>'account_id';
    IF NOT FOUND OR acct.plan = 'trial' OR acct.state <> 'active' THEN
      outcome := 'account';
    ELSIF EXISTS (SELECT 1 FROM calls c WHERE c.account_id = item->>'account_id' AND c.state = 'reserved') THEN
      outcome := 'busy';
    ELSIF acct.grant_credits + acct.balance_credits < charge THEN
      outcome := 'credits';
    ELSIF charge > 0 AND acct.alert_armed AND acct.grant_credits + acct.balance_credits - charge < acct.alert_threshold THEN
      outcome := 'alert';
    ELSE
      from_grant := LEAST(acct.grant_credits, charge);
      from_balance := charge - from_grant;
      funding := format('{"free_tier":0,"grant":%s,"balance":%s}', from_grant, from_balance);
      INSERT INTO idempotency_keys AS k (account_id, idem_key, fingerprint, state, owner, call_id, response,
          lease_expires_at, replay_until, tombstone_until, created_at)
        VALUES (item->>'account_id', item->>'idem_key', item->>'fingerprint', 'done', cid, cid,
          (item->>'head') || funding || (item->>'tail'), (item->>'now')::bigint,
          (item->>'replay_until')::bigint, (item->>'tombstone_until')::bigint, (item->>'now')::bigint)
        ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        outcome := 'key';
        from_grant := 0;
        from_balance := 0;
      ELSE
        outcome := 'charged';
        UPDATE accounts a SET grant_credits = a.grant_credits - from_grant,
            balance_credits = a.balance_credits - from_balance
          WHERE a.id = item->>'account_id';
        INSERT INTO calls (id, account_id, key_id, operation, state, ip, day, quoted,
            reserved_free, reserved_grant, reserved_balance, charged, charged_free, charged_grant,
            charged_balance, refunds, idempotency_key, lease_expires_at, created_at, settled_at)
          VALUES (cid, item->>'account_id', item->>'key_id', item->>'operation', 'settled',
            item->>'ip', (item->>'day')::integer, (item->>'quoted')::integer, 0, from_grant, from_balance,
            charge, 0, from_grant, from_balance, item->>'refunds', item->>'idem_key',
            (item->>'now')::bigint, (item->>'now')::bigint, (item->>'now')::bigint);
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;
