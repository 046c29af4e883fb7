import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { dayOf, dayToIso } from "../domain/time.ts"
import * as Row from "../store/rows.ts"

export interface UsageFacts {
  readonly freeUsedToday: number
  readonly today: { readonly credits: number; readonly calls: number }
  readonly history: ReadonlyArray<{ readonly day: string; readonly credits: number; readonly calls: number }>
}

const decodeFreeUse = Row.decoder(Schema.Struct({ credits_used: Row.Int }), "free_tier_usage")
/** Settled calls per UTC day (SUM of an integer column and COUNT are int8). */
const decodeDays = Row.decoder(
  Schema.Struct({ day: Row.Int, credits: Row.Int, calls: Row.Int }),
  "calls per day"
)

/** Read-only facts for `get_usage`: today's free-tier use for the IP and the account's last 30 days. */
export class Usage extends Context.Service<
  Usage,
  { readonly facts: (accountId: string, ip: string) => Effect.Effect<UsageFacts, SqlError> }
>()("app/Usage") {
  static readonly layer = Layer.effect(
    Usage,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const facts = Effect.fn("Usage.facts")(function* (accountId: string, ip: string) {
        const today = dayOf(yield* Clock.currentTimeMillis)
        const free = yield* sql`
          SELECT credits_used FROM free_tier_usage WHERE ip = ${ip} AND day = ${today}`.pipe(
          Effect.flatMap(decodeFreeUse)
        )
        const days = yield* sql`
          SELECT day, SUM(charged) AS credits, COUNT(*) AS calls FROM calls
          WHERE account_id = ${accountId} AND state = 'settled' AND day > ${today - 30}
          GROUP BY day ORDER BY day DESC`.pipe(Effect.flatMap(decodeDays))
        const history = days.map((row) => ({
          day: dayToIso(row.day),
          credits: row.credits,
          calls: row.calls
        }))
        const todayRow = days.find((row) => row.day === today)
        return {
          freeUsedToday: free[0]?.credits_used ?? 0,
          today: { credits: todayRow?.credits ?? 0, calls: todayRow?.calls ?? 0 },
          history
        }
      })
      return Usage.of({ facts })
    })
  )
}
