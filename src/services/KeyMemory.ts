import { Context, Effect, Layer } from "effect"
import type { Account, IdentityVersions, KeyRecord } from "../domain/accounts.ts"
import { identityPolicy } from "../domain/signIn.ts"
import { Notifications } from "../store/Notifications.ts"

/** The channel migrations/0008's triggers notify with an account id. */
const identityChannel = "svc_identity"

/** A spend key's account as the database last gave it. */
export interface Remembered {
  readonly principal: { readonly key: KeyRecord; readonly account: Account }
  lastUsedAt: number | null
  readonly until: number
  /** The versions the principal was read at, which a cache hit's charge checks (`svc_charge_hits`). */
  readonly versions: IdentityVersions
}

/**
 * Spend keys' accounts in this instance's memory, so a call needs no lookup.
 *
 * An account is forgotten when the database reports a change that matters to authentication
 * (`svc_identity`, sent at commit by migrations/0008's triggers: revocation, suspension, plan,
 * entitlements, owner), on this instance and every other. A remembered key is used only once every
 * report committed before the request has arrived (`caughtUp`: on PostgreSQL a round trip on the
 * listening session, shared by the requests waiting for it), so a change committed on another
 * instance holds from that instance's answer on. This instance's own changes do not wait for the
 * report: the service making one calls `changing` first, and until the report comes (or
 * `keyMemoryMs` passes, for a change rolled back) the account is read from the database on every
 * request. Nothing is remembered until the listener is subscribed, everything is forgotten when it
 * may have missed a report, and an entry lives at most `keyMemoryMs` however quiet the channel is.
 *
 * A cache hit need not wait for the reports (`peek`): its charge checks the identity versions the
 * entry was read at, which the same triggers bump (migrations/0021), in the statement that charges.
 * Everything else a remembered key does waits for them first (`confirm` after `peek`); an entry
 * missing or expired is read from the database without waiting for them.
 */
export class KeyMemory extends Context.Service<
  KeyMemory,
  {
    /** What is remembered of the key now, before the reports committed before the call are applied. */
    readonly peek: (hash: string, now: number) => Remembered | undefined
    /**
     * Whether `entry` (from `peek`) is still what is remembered once every report committed before
     * the call is applied.
     */
    readonly confirm: (hash: string, entry: Remembered, now: number) => Effect.Effect<boolean>
    /** Stores what a lookup read, unless something was forgotten since `since` (a `generation()`). */
    readonly remember: (hash: string, entry: Remembered, since: number, now: number) => void
    readonly generation: () => number
    /** Forgets the account's keys: what is remembered of them was found out of date. */
    readonly forget: (accountId: string) => void
    /** This instance is changing the account: forget it and read it from the database until its report. */
    readonly changing: (accountId: string) => Effect.Effect<void>
  }
>()("services/KeyMemory") {
  static readonly make = (limit: number) =>
    Effect.gen(function* () {
      const byHash = new Map<string, Remembered>()
      const hashesOf = new Map<string, Set<string>>()
      /** Accounts this instance is changing, until when (their report ends it sooner). */
      const unsettled = new Map<string, number>()
      let listening = false
      // Bumped by every forgetting: a lookup that began before one must not store what it read.
      let generation = 0
      const forget = (accountId: string) => {
        generation++
        for (const hash of hashesOf.get(accountId) ?? []) byHash.delete(hash)
        hashesOf.delete(accountId)
      }
      const forgetAll = () => {
        generation++
        byHash.clear()
        hashesOf.clear()
      }
      const reports = yield* (yield* Notifications).listen(identityChannel, {
        onPayload: (accountId) => {
          forget(accountId)
          unsettled.delete(accountId)
        },
        onGap: () => {
          listening = false
          forgetAll()
        },
        onListening: () => {
          listening = true
        }
      })
      const current = (hash: string, now: number) => {
        const found = byHash.get(hash)
        if (found === undefined) return undefined
        if (found.until > now) return found
        byHash.delete(hash)
        return undefined
      }
      return KeyMemory.of({
        generation: () => generation,
        forget,
        peek: current,
        confirm: (hash, entry, now) =>
          Effect.map(reports.caughtUp, (caughtUp) => caughtUp && current(hash, now) === entry),
        remember: (hash, entry, since, now) => {
          if (!listening || since !== generation) return
          const accountId = entry.principal.account.id
          const until = unsettled.get(accountId)
          if (until !== undefined) {
            if (until > now) return
            unsettled.delete(accountId)
          }
          if (byHash.size >= limit) {
            // The oldest entry (a Map keeps insertion order) makes room.
            const oldest = byHash.keys().next().value
            if (oldest !== undefined) byHash.delete(oldest)
          }
          byHash.set(hash, entry)
          const hashes = hashesOf.get(accountId) ?? new Set()
          hashes.add(hash)
          hashesOf.set(accountId, hashes)
        },
        changing: (accountId) =>
          Effect.clockWith((clock) =>
            Effect.sync(() => {
              unsettled.set(accountId, clock.currentTimeMillisUnsafe() + identityPolicy.keyMemoryMs)
              forget(accountId)
            })
          )
      })
    })

  static readonly layer = Layer.effect(KeyMemory, KeyMemory.make(identityPolicy.keyMemoryEntries))
}
