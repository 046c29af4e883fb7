import type { Effect } from "effect"
import type { Unauthorized } from "../contract/errors.ts"
import type { Account, IdentityVersions, KeyRecord } from "../domain/accounts.ts"

/**
 * How a caller taken from the instance's memory of spend keys, before the reports committed before
 * the request were applied, is confirmed (`Bearers.authenticateToCharge`). A cache hit's charge
 * acts on it as it is, checking `versions` in its statement; every other answer confirms it first.
 */
export interface Unconfirmed {
  /** The identity versions it was read at. */
  readonly versions: IdentityVersions
  /**
   * `undefined` when it still holds once every report committed before the call is applied;
   * otherwise the key and account as the database has them now, or why the key cannot spend.
   */
  readonly confirm: Effect.Effect<Identity | undefined, Unauthorized>
  /** The key and account as the database has them now (its versions were found changed). */
  readonly reread: Effect.Effect<Identity, Unauthorized>
}

/** A key and its account. */
export interface Identity {
  readonly key: KeyRecord
  readonly account: Account
}

/**
 * The caller, taken from memory unconfirmed, no longer holds: the call starts again as `identity`
 * (read from the database), having kept nothing. Never leaves the front door.
 */
export class Reauthenticate {
  readonly _tag = "Reauthenticate"
  readonly identity: Identity
  constructor(identity: Identity) {
    this.identity = identity
  }
}
