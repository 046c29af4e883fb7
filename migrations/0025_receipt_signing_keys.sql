-- The keys that sign receipts (src/metering/SigningKeys.ts). Every key ever used stays here with its
-- public JWK, so `GET /.well-known/jwks.json` keeps publishing it after a rotation and old
-- receipts keep verifying. `private_jwk` is set only for a key the database keeps (PostgreSQL
-- without RECEIPT_SIGNING_KEY: several instances must sign with one key); a key from
-- RECEIPT_SIGNING_KEY or from PGlite's `DATA_DIR/receipt-signing-key` has only its public half here.
-- A rotation retires the current stored key and clears its private half.

CREATE TABLE receipt_signing_keys (
  kid text PRIMARY KEY,
  public_jwk text NOT NULL,
  private_jwk text,
  created_at bigint NOT NULL,
  retired_at bigint
);

-- At most one current stored key: instances starting together insert one each, one insert wins
-- and all of them read the winner.
CREATE UNIQUE INDEX receipt_signing_keys_one_current ON receipt_signing_keys ((true))
  WHERE private_jwk IS NOT NULL AND retired_at IS NULL;
