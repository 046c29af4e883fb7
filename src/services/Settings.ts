import { Clock, Context, Effect, Layer, Ref } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** Operator switches, shared by every instance through the database. */
export interface OperatorSettings {
  readonly freeTierOpen: boolean
  /** Ceiling on free-tier credits per UTC day across all IPs; undefined for none. */
  readonly globalDailyFreeCredits: number | undefined
  readonly livePaused: boolean
}

const defaults: OperatorSettings = {
  freeTierOpen: true,
  globalDailyFreeCredits: undefined,
  livePaused: false
}

/** Other instances see a change within this many milliseconds; the instance that made it sees it at once. */
const ttlMs = 1_000

export class Settings extends Context.Service<
  Settings,
  {
    readonly current: Effect.Effect<OperatorSettings, SqlError>
    readonly update: (patch: Partial<OperatorSettings>) => Effect.Effect<OperatorSettings, SqlError>
  }
>()("app/Settings") {
  static readonly layer = Layer.effect(
    Settings,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cached = yield* Ref.make<{ readonly at: number; readonly value: OperatorSettings } | undefined>(
        undefined
      )

      const load = Effect.gen(function* () {
        const rows = yield* sql<{
          readonly name: string
          readonly value: string
        }>`SELECT name, value FROM settings`
        const stored = Object.fromEntries(rows.map((row) => [row.name, JSON.parse(row.value)]))
        const value: OperatorSettings = {
          freeTierOpen: stored.freeTierOpen ?? defaults.freeTierOpen,
          globalDailyFreeCredits: stored.globalDailyFreeCredits ?? undefined,
          livePaused: stored.livePaused ?? defaults.livePaused
        }
        yield* Ref.set(cached, { at: yield* Clock.currentTimeMillis, value })
        return value
      })

      const current = Effect.gen(function* () {
        const hit = yield* Ref.get(cached)
        const now = yield* Clock.currentTimeMillis
        return hit !== undefined && now - hit.at < ttlMs ? hit.value : yield* load
      })

      const update = Effect.fn("Settings.update")(function* (patch: Partial<OperatorSettings>) {
        for (const [name, value] of Object.entries(patch)) {
          const json = JSON.stringify(value ?? null)
          yield* sql`INSERT INTO settings (name, value) VALUES (${name}, ${json})
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`
        }
        return yield* load
      })

      return Settings.of({ current, update })
    })
  )
}
