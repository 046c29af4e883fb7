-- Purchases paid with x402: the payer's address, the chain (CAIP-2), the token, the amount in the
-- token's own units (exact, as text: a uint256) and the settling transaction's hash. Such a
-- purchase's `payment_ref` is `x402:<network>:<asset>:<payer>:<nonce>` (lower case): the EIP-3009
-- authorization's nonce, unique per payer and token on its chain, so the unique `payment_ref`
-- credits one authorization once, across retries, instances and restarts. Other rails leave the
-- columns null.

ALTER TABLE purchases ADD COLUMN payer text;
ALTER TABLE purchases ADD COLUMN network text;
ALTER TABLE purchases ADD COLUMN asset text;
ALTER TABLE purchases ADD COLUMN amount_atomic text;
ALTER TABLE purchases ADD COLUMN transaction_hash text;

-- An x402 payment between its settlement and its credit: written before the facilitator is asked
-- to settle, deleted once the purchase is credited or the settlement definitely failed. A row left
-- behind (a crash, a facilitator that timed out after broadcasting) is settled business the next
-- attempt with the same authorization finds on-chain and credits, once, under `payment_ref`.
CREATE TABLE x402_settlements (
  payment_ref text PRIMARY KEY,
  account_id text NOT NULL,
  credits bigint NOT NULL,
  created_at bigint NOT NULL
);
