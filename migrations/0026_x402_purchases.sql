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
