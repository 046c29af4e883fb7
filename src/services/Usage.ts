import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { dayOf, dayToIso } from "../domain/time.ts"

export interface UsageFacts {
  readonly freeUsedToday: number
  readonly today: { readonly credits: number; readonly calls: number }
  readonly history: ReadonlyArray<{ readonly day: string; readonly credits: number; readonly calls: number }>
}

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
        const free = yield* sql<{ readonly credits_used: number }>`
          SELECT credits_used FROM free_tier_usage WHERE ip = ${ip} AND day = ${today}`
        const days = yield* sql<{
          readonly day: number
          readonly credits: number | string
          readonly calls: number | string
        }>`
          SELECT day, SUM(charged) AS credits, COUNT(*) AS calls FROM calls
          WHERE account_id = ${accountId} AND state = 'settled' AND day > ${today - 30}
          GROUP BY day ORDER BY day DESC`
        const history = days.map((row) => ({
          day: dayToIso(Number(row.day)),
          credits: Number(row.credits),
          calls: Number(row.calls)
        }))
        const todayRow = days.find((row) => Number(row.day) === today)
        return {
          freeUsedToday: Number(free[0]?.credits_used ?? 0),
          today: { credits: Number(todayRow?.credits ?? 0), calls: Number(todayRow?.calls ?? 0) },
          history
        }
      })
      return Usage.of({ facts })
    })
  )
}
