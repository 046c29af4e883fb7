-- The money rule's small helpers in PL/pgSQL, for their plans. A LANGUAGE sql function that cannot
-- be inlined (these return records or run an INSERT) is parsed and planned again on every call
-- before PostgreSQL 18, and a cache hit's charge calls three of them per item: measured with
-- `track_functions = 'all'` under the bench's cache-hit load, svc_key_cap took 0.17 ms a call and
-- svc_key_spend 0.12 ms, more than half of `svc_charge_hits`. PL/pgSQL keeps each statement's plan
-- for the session. Same signatures, same results; the keys are looked up by id (an index scan) rather
-- than through an OR.

CREATE OR REPLACE FUNCTION svc_key_cap(p_key text, p_day integer,
  OUT cap_left bigint, OUT cap_key text, OUT cap_period text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT k.spend_cap_credits - COALESCE(s.spent, 0), k.id, k.cap_period INTO cap_left, cap_key, cap_period
  FROM api_keys k
  LEFT JOIN key_spend s ON s.key_id = k.id AND s.period = svc_period(k.cap_period, p_day)
  WHERE k.id = ANY (ARRAY[p_key, (SELECT c.parent_key_id FROM api_keys c WHERE c.id = p_key)])
    AND k.spend_cap_credits IS NOT NULL
  ORDER BY 1, 2
  LIMIT 1;
END
$$;

CREATE OR REPLACE FUNCTION svc_key_spend(p_key text, p_day integer, p_delta bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO key_spend (key_id, period, spent)
    SELECT k.id, svc_period(k.cap_period, p_day), GREATEST(p_delta, 0)
    FROM api_keys k
    WHERE k.id = ANY (ARRAY[p_key, (SELECT c.parent_key_id FROM api_keys c WHERE c.id = p_key)])
      AND k.spend_cap_credits IS NOT NULL
  ON CONFLICT (key_id, period) DO UPDATE SET spent = GREATEST(key_spend.spent + p_delta, 0);
END
$$;

CREATE OR REPLACE FUNCTION svc_in_flight(p_account text, OUT lease_expires_at bigint, OUT seen bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT c.lease_expires_at, GREATEST(c.created_at, COALESCE(c.heartbeat_at, 0)) INTO lease_expires_at, seen
  FROM calls c WHERE c.account_id = p_account AND c.state = 'reserved' LIMIT 1;
END
$$;
