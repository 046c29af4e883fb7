import { Clock, Context, Effect, Layer, Ref, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Row from "../store/rows.ts"

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

/** `settings` holds one JSON value per switch: absent when never set, null when cleared. */
const decodeSettings = Row.decoder(
  Schema.Struct({ name: Schema.String, value: Schema.fromJsonString(Schema.Unknown) }),
  "settings"
)
/** Every stored switch as one object; a name this version does not know is ignored. */
const decodeSwitches = Row.decoder(
  Schema.Struct({
    freeTierOpen: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
    globalDailyFreeCredits: Schema.optionalKey(Schema.NullOr(Row.Int)),
    livePaused: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
  }),
  "settings (switches)"
)

/** Other instances see a change within this many milliseconds; the instance that made it sees it at once. */
const ttlMs = 1_000

export class Settings extends Context.Service<
  Settings,
  {
    readonly current: Effect.Effect<OperatorSettings, SqlError>
    readonly update: (patch: Partial<OperatorSettings>) => Effect.Effect<OperatorSettings, SqlError>
  }
>()("services/Settings") {
  static readonly layer = Layer.effect(
    Settings,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cached = yield* Ref.make<{ readonly at: number; readonly value: OperatorSettings } | undefined>(
        undefined
      )

      const load = Effect.gen(function* () {
        const rows = yield* sql`SELECT name, value FROM settings`.pipe(Effect.flatMap(decodeSettings))
        const switches = yield* decodeSwitches([Object.fromEntries(rows.map((row) => [row.name, row.value]))])
        const stored = switches[0] ?? {}
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

/** The free tier's numbers a funding decision takes: the per-IP budget and the operator's switches. */
export type Terms = Effect.Success<ReturnType<typeof freeTierTerms>>

export const freeTierTerms = (settings: Settings["Service"], freePerIp: number) =>
  Effect.map(settings.current, (operator) => ({
    free_per_ip: freePerIp,
    free_open: operator.freeTierOpen,
    global_free: operator.globalDailyFreeCredits ?? null
  }))
