-- What a key has left reads as the charge finds it. `svc_key_cap` returns a row of NULLs for a key
-- without a cap (nor a capped parent), and `GREATEST(NULL, 0)` is 0: every uncapped key was told
-- `Key-Cap-Remaining: 0`, though its next call is not bounded by any cap. NULL stays NULL now (no
-- header, no `key_cap_remaining`), and a cap is still never reported below 0.
--
-- `svc_remaining` is also what `GET /v1/usage` reads (src/services/Usage.ts), so the report and
-- the headers say what the next call's `svc_funding` and `svc_key_cap` will find.

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
  SELECT CASE WHEN k.cap_left IS NULL THEN NULL ELSE GREATEST(k.cap_left, 0) END INTO cap_left
    FROM svc_key_cap(p_key, p_day) k;
END
$$;
