-- The housekeeping's minute purge of idempotency keys (`IdempotencyStore.purgeExpired`) found
-- the expired tombstones and the dead claims by reading the whole table: two sequential scans a
-- minute on every instance, each 0.6-0.8 s at 1,000,000 keys on PostgreSQL (a gigabyte, with the
-- stored results), and on PGlite a stall of the service's own thread as long. The table grows with
-- the ledger (a key per call with an Idempotency-Key, kept 8 days), so the purge's cost did too.
-- Both now read an index of only the rows they look for. A tombstone's end is its call's time plus
-- a constant, so the first index grows at its right edge; the second holds only running claims.
CREATE INDEX idempotency_keys_tombstones ON idempotency_keys (tombstone_until) WHERE state = 'done';
CREATE INDEX idempotency_keys_stale_claims ON idempotency_keys (lease_expires_at) WHERE state = 'running';
