-- Webhook fairness (second security audit): one account's slow receivers must not delay another's.
--
-- An endpoint now backs off as a whole: after a failed attempt none of its queued deliveries is
-- tried before `retry_at` (the wait doubling with `failures`, its failed attempts in a row since
-- the last success, from WEBHOOK_RETRY_FIRST_SECONDS up to WEBHOOK_RETRY_MAX_SECONDS); a success or
-- the owner's test ping clears both. Until now only the failed delivery waited, and every other
-- delivery queued for the same silent endpoint was tried at once, each costing a worker its timeout.
--
-- The claim (src/webhooks/Deliveries.ts) also counts the endpoints of an account whose lease is
-- held, to hold at most WEBHOOK_CONCURRENCY_PER_ACCOUNT of them at once and to serve the account
-- holding fewest first: the partial index below is what it counts.

ALTER TABLE webhook_endpoints ADD COLUMN retry_at bigint;
ALTER TABLE webhook_endpoints ADD COLUMN failures integer NOT NULL DEFAULT 0;
CREATE INDEX webhook_endpoints_leased ON webhook_endpoints (account_id, locked_until)
  WHERE locked_until IS NOT NULL;
