-- Fencing: an idempotency claim names the call that holds it (the call's id, which is also its
-- receipt id), so a holder whose lease expired can neither release nor complete a newer holder's
-- claim. A live call records a heartbeat while it runs, so a caller told to wait learns whether the
-- holder is alive (retry soon) or silent (retry when its lease ends).
ALTER TABLE idempotency_keys ADD COLUMN owner text;
ALTER TABLE calls ADD COLUMN heartbeat_at bigint;
