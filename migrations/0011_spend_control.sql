-- Spend control: a key's own limits (a spend cap per day, month or in total, an expiry, the
-- platforms it may call) and child keys an agent makes for its sub-agents. A cap is held in the
-- same functions that charge (migrations/0013_money_rule.sql), under the account's lock, so no
-- read before a charge can race it.

ALTER TABLE api_keys ADD COLUMN spend_cap_credits bigint CHECK (spend_cap_credits IS NULL OR spend_cap_credits >= 1);
ALTER TABLE api_keys ADD COLUMN cap_period text NOT NULL DEFAULT 'total' CHECK (cap_period IN ('day', 'month', 'total'));
ALTER TABLE api_keys ADD COLUMN expires_at bigint;
-- NULL: every platform the account is entitled to; otherwise a comma-separated subset.
ALTER TABLE api_keys ADD COLUMN platforms text;
ALTER TABLE api_keys ADD COLUMN parent_key_id text REFERENCES api_keys (id);
CREATE INDEX api_keys_children ON api_keys (parent_key_id) WHERE parent_key_id IS NOT NULL;

-- A key's limits are read from memory by every instance: a change of them is reported like a
-- revocation (svc_notify_key), so no instance serves a key under its old limits for long.
DROP TRIGGER api_keys_identity ON api_keys;
CREATE TRIGGER api_keys_identity AFTER UPDATE ON api_keys FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.account_id IS DISTINCT FROM NEW.account_id
    OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
    OR OLD.platforms IS DISTINCT FROM NEW.platforms OR OLD.spend_cap_credits IS DISTINCT FROM NEW.spend_cap_credits
    OR OLD.cap_period IS DISTINCT FROM NEW.cap_period)
  EXECUTE FUNCTION svc_notify_key();

-- What a capped key (a child, or a capped parent) has spent in its period: the credits of its
-- settled calls plus the quotes of its reserved ones, a child's counting toward its parent's too.
-- Periods are 'total', 'day:<UTC days since epoch>' and 'month:<YYYY-MM>'.
CREATE TABLE key_spend (
  key_id text NOT NULL REFERENCES api_keys (id),
  period text NOT NULL,
  spent bigint NOT NULL DEFAULT 0 CHECK (spent >= 0),
  PRIMARY KEY (key_id, period)
);

-- The period a charge on UTC day `p_day` counts toward, for a cap of `p_cap_period`.
CREATE FUNCTION svc_period(p_cap_period text, p_day integer)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_cap_period
    WHEN 'day' THEN 'day:' || p_day
    WHEN 'month' THEN 'month:' || to_char(date '1970-01-01' + p_day, 'YYYY-MM')
    ELSE 'total' END
$$;

-- The caps a key's charge is held to: its own and its parent's. `cap_left` is the smallest
-- remainder among them in the period of `p_day` (NULL: uncapped), `cap_key` and `cap_period` the
-- key whose cap binds. Read under the account's lock, as every charge and every cap change is.
CREATE FUNCTION svc_key_cap(p_key text, p_day integer,
  OUT cap_left bigint, OUT cap_key text, OUT cap_period text)
LANGUAGE sql STABLE AS $$
  SELECT k.spend_cap_credits - COALESCE(s.spent, 0), k.id, k.cap_period
  FROM api_keys k
  LEFT JOIN key_spend s ON s.key_id = k.id AND s.period = svc_period(k.cap_period, p_day)
  WHERE k.spend_cap_credits IS NOT NULL
    AND (k.id = p_key OR k.id = (SELECT c.parent_key_id FROM api_keys c WHERE c.id = p_key))
  ORDER BY 1, 2
  LIMIT 1
$$;

-- Counts `p_delta` credits (negative: given back) toward the caps of a key and its parent.
CREATE FUNCTION svc_key_spend(p_key text, p_day integer, p_delta bigint)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO key_spend (key_id, period, spent)
    SELECT k.id, svc_period(k.cap_period, p_day), GREATEST(p_delta, 0)
    FROM api_keys k
    WHERE k.spend_cap_credits IS NOT NULL
      AND (k.id = p_key OR k.id = (SELECT c.parent_key_id FROM api_keys c WHERE c.id = p_key))
  ON CONFLICT (key_id, period) DO UPDATE SET spent = GREATEST(key_spend.spent + p_delta, 0)
$$;

-- A key's spend in the period of `p_day` from its calls (and its children's), for a cap just set
-- or changed: the counter starts from what the key has really spent in that period.
CREATE FUNCTION svc_key_spent(p_key text, p_cap_period text, p_day integer)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT COALESCE(SUM(CASE WHEN c.state = 'reserved' THEN c.quoted ELSE c.charged END), 0)::bigint
  FROM calls c
  WHERE c.account_id = (SELECT k.account_id FROM api_keys k WHERE k.id = p_key)
    AND c.state IN ('reserved', 'settled')
    AND (c.key_id = p_key OR c.key_id IN (SELECT k.id FROM api_keys k WHERE k.parent_key_id = p_key))
    AND svc_period(p_cap_period, c.day) = svc_period(p_cap_period, p_day)
$$;
