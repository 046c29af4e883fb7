import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { dayOf, dayToIso } from "../domain/time.ts"
import * as Row from "../store/rows.ts"

export interface UsageFacts {
  readonly freeUsedToday: number
  readonly today: { readonly credits: number; readonly calls: number }
  readonly history: ReadonlyArray<{ readonly day: string; readonly credits: number; readonly calls: number }>
  /** The active subscription, else the latest ended one. */
  readonly subscription?: {
    readonly pack: string
    readonly rail: string
    readonly status: "active" | "canceled"
    readonly currentPeriodEnd: number
    readonly cancelAtPeriodEnd: boolean
  }
  readonly purchases: { readonly count: number; readonly lastAt: number | null }
}

const decodeFreeUse = Row.decoder(Schema.Struct({ credits_used: Row.Int }), "free_tier_usage")
/** Settled calls per UTC day (SUM of an integer column and COUNT are int8). */
const decodeDays = Row.decoder(
  Schema.Struct({ day: Row.Int, credits: Row.Int, calls: Row.Int }),
  "calls per day"
)

/** An account's subscription as get_usage and the operator's `admin purchases` show it. */
export const decodeSubscription = Row.decoder(
  Schema.Struct({
    pack: Schema.String,
    rail: Schema.String,
    status: Schema.Literals(["active", "canceled"]),
    current_period_end: Row.Int,
    cancel_at_period_end: Schema.Boolean
  }),
  "subscriptions"
)
const decodePurchases = Row.decoder(
  Schema.Struct({ n: Row.Int, last_at: Row.NullableInt }),
  "purchases (count and latest)"
)

/**
 * Read-only facts for `get_usage`: today's free-tier use for the IP, the account's last 30 days, its
 * subscription and purchases.
 */
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
        const subscriptions = yield* sql`
          SELECT pack, rail, status, current_period_end, cancel_at_period_end FROM subscriptions
          WHERE account_id = ${accountId}
          ORDER BY (status = 'active') DESC, created_at DESC, id DESC LIMIT 1`.pipe(
          Effect.flatMap(decodeSubscription)
        )
        const purchases = yield* sql`
          SELECT COUNT(*) AS n, MAX(created_at) AS last_at FROM purchases WHERE account_id = ${accountId}`.pipe(
          Effect.flatMap(decodePurchases)
        )
        const subscription = subscriptions[0]
        return {
          freeUsedToday: free[0]?.credits_used ?? 0,
          today: { credits: todayRow?.credits ?? 0, calls: todayRow?.calls ?? 0 },
          history,
          ...(subscription === undefined
            ? {}
            : {
                subscription: {
                  pack: subscription.pack,
                  rail: subscription.rail,
                  status: subscription.status,
                  currentPeriodEnd: subscription.current_period_end,
                  cancelAtPeriodEnd: subscription.cancel_at_period_end
                }
              }),
          purchases: { count: purchases[0]?.n ?? 0, lastAt: purchases[0]?.last_at ?? null }
        }
      })
      return Usage.of({ facts })
    })
  )
}
