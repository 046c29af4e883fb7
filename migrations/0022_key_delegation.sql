-- Keys as the contract has them (docs/security.md, "Keys and child keys").
--
-- Delegation is the owner's explicit grant: `may_delegate`, set only by a management token (REST,
-- MCP, the CLI, the dashboard), lets a key make child keys. Every existing key starts without it
-- (false): an agent that made child keys with its own key until now asks its owner to grant it.
-- Child keys already made keep working, bounded by their parent as below.
--
-- Spend keys do not expire: `expires_at` is dropped. Release note: keys that carried an expiry
-- keep working until they are revoked; a person ends a key by revoking it.
--
-- A child is bounded by its parent at every call: authentication reads the parent's current
-- platforms and liveness (src/services/Accounts.ts), and a change of the parent that matters to
-- authentication bumps its children's identity versions too, so a cache hit charged from a child
-- remembered before the change is declined by `svc_charge_hits`' own version check
-- (migrations/0021) and the child read again.

ALTER TABLE api_keys ADD COLUMN may_delegate boolean NOT NULL DEFAULT false;

DROP TRIGGER api_keys_identity ON api_keys;
ALTER TABLE api_keys DROP COLUMN expires_at;
CREATE TRIGGER api_keys_identity
  BEFORE UPDATE OF revoked_at, account_id, secret_hash, platforms, spend_cap_credits, cap_period, may_delegate
  ON api_keys FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.account_id IS DISTINCT FROM NEW.account_id
    OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash OR OLD.platforms IS DISTINCT FROM NEW.platforms
    OR OLD.spend_cap_credits IS DISTINCT FROM NEW.spend_cap_credits OR OLD.cap_period IS DISTINCT FROM NEW.cap_period
    OR OLD.may_delegate IS DISTINCT FROM NEW.may_delegate)
  EXECUTE FUNCTION svc_key_identity_changed();

-- A parent's version moved (the trigger above): its children's move with it. The account's report
-- was sent by the parent's own trigger (one account), so every instance forgets the children too.
CREATE FUNCTION svc_key_children_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE api_keys SET identity_version = identity_version + 1 WHERE parent_key_id = NEW.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_children AFTER UPDATE ON api_keys FOR EACH ROW
  WHEN (OLD.identity_version IS DISTINCT FROM NEW.identity_version AND NEW.parent_key_id IS NULL)
  EXECUTE FUNCTION svc_key_children_changed();
