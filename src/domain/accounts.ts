import type { Plan, Platform } from "./plans.ts"

/** An account as the service reads it: its plan, state, credits and the platforms it may call. */
export interface Account {
  readonly id: string
  readonly plan: Plan
  readonly state: "active" | "suspended"
  readonly email: string | null
  readonly claimed: boolean
  readonly grantCredits: number
  readonly balanceCredits: number
  readonly entitlements: ReadonlyArray<Platform>
  readonly createdAt: number
  /** The balance alert's threshold in credits; 0 is off. */
  readonly alertThreshold: number
}

/**
 * An account's and a spend key's identity versions as they were read together: every change that
 * matters to authentication bumps its row's (migrations/0021_identity_versions.sql), so a cache
 * hit's charge can tell a remembered key still current.
 */
export interface IdentityVersions {
  readonly account: number
  readonly key: number
}

/** A spend key as the service reads it; its secret is never stored, only its hash and hint. */
export interface KeyRecord {
  readonly id: string
  readonly accountId: string
  readonly hint: string
  readonly revoked: boolean
  /**
   * The platforms this key may call, within the account's; absent for all of them. A child key's
   * are its parent's current ones intersected with its own.
   */
  readonly platforms?: ReadonlyArray<Platform>
  /** The key that made this child key. */
  readonly parentKeyId?: string
  /** The owner granted this key the making of child keys (`may_delegate`); a child never has it. */
  readonly mayDelegate?: true
}

/** Whether a key's record carries its owner's grant of making child keys (a child never does). */
export const grantedDelegation = (key: KeyRecord) => key.mayDelegate === true && key.parentKeyId === undefined

/** Who a management token stands for: an identity (a confirmed email) and the accounts it governs. */
export interface Governor {
  readonly tokenId: string
  readonly hint: string
  readonly email: string
  readonly accounts: ReadonlyArray<Account>
}
