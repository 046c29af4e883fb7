-- What the x402 reconciler needs to settle a begun payment without its client: the authorization
-- (payer, token, nonce, amount in the token's units) and the moment after which the token refuses
-- it (`valid_before`, unix seconds). Rows begun before this migration leave them null: the
-- reconciler reads the authorization from `payment_ref` and waits a day before closing such a row.

ALTER TABLE x402_settlements ADD COLUMN network text;
ALTER TABLE x402_settlements ADD COLUMN asset text;
ALTER TABLE x402_settlements ADD COLUMN payer text;
ALTER TABLE x402_settlements ADD COLUMN nonce text;
ALTER TABLE x402_settlements ADD COLUMN amount_atomic text;
ALTER TABLE x402_settlements ADD COLUMN valid_before bigint;
CREATE INDEX x402_settlements_created_at ON x402_settlements (created_at);
