import { Clock, Context, Effect, Layer, Schema } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { AppConfig } from "../config.ts"
import type { CapPeriod } from "../domain/keyLimits.ts"
import { dayOf, dayToIso } from "../domain/time.ts"
import { pipelinedClient } from "../store/Pipelined.ts"
import * as Row from "../store/rows.ts"
import { freeTierTerms, Settings } from "./Settings.ts"

export interface UsageFacts {
  /** The account's credits as the database has them now. */
  readonly grantCredits: number
  readonly balanceCredits: number
  readonly freeUsedToday: number
  /**
   * What the next (recent-data) call finds, read from the money rule itself (`svc_free_left`,
   * `svc_remaining`): the free budget left to this IP today (0 while the free tier is closed or the
   * global ceiling is reached), the spendable credits, and the tightest cap's remainder (undefined
   * for a key without a cap nor a capped parent).
   */
  readonly freeLeft: number
  readonly spendable: number
  readonly keyCapLeft: number | undefined
  /** The calling key's own cap and its spend in the cap's current period; undefined without a cap. */
  readonly keyCap?: {
    readonly spendCapCredits: number
    readonly capPeriod: CapPeriod
    readonly spentInPeriod: number
  }
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
  /** Automatic top-up, once it was ever armed: its settings and this UTC month's spend. */
  readonly topup?: {
    readonly enabled: boolean
    readonly pack: string
    readonly belowCredits: number
    readonly monthlyMaxUsdCents: number
    readonly monthSpentUsdCents: number
  }
}

/** Settled calls per UTC day (`usage_days`, int8 columns). */
const DayRow = Schema.Struct({ day: Row.Int, credits: Row.Int, calls: Row.Int })

/** An account's subscription as get_usage and the operator's `admin purchases` show it. */
const SubscriptionRow = Schema.Struct({
  pack: Schema.String,
  rail: Schema.String,
  status: Schema.Literals(["active", "canceled"]),
  current_period_end: Row.Int,
  cancel_at_period_end: Schema.Boolean
})
export const decodeSubscription = Row.decoder(SubscriptionRow, "subscriptions")

const TopupRow = Schema.Struct({
  enabled: Schema.Boolean,
  pack: Schema.String,
  below_credits: Row.Int,
  monthly_max_usd_cents: Row.Int,
  spent: Row.Int
})

/** Everything `get_usage` reads, in one row (the lists as JSON). */
const decodeFacts = Row.decoder(
  Schema.Struct({
    grant_credits: Row.Int,
    balance_credits: Row.Int,
    free_used: Row.NullableInt,
    free_left: Row.Int,
    spendable: Row.Int,
    cap_left: Row.NullableInt,
    spend_cap_credits: Row.NullableInt,
    cap_period: Schema.NullOr(Schema.Literals(["day", "month", "total"])),
    spent_in_period: Row.NullableInt,
    days: Schema.Array(DayRow),
    subscription: Schema.NullOr(SubscriptionRow),
    purchases: Row.Int,
    last_purchase_at: Row.NullableInt,
    topup: Schema.NullOr(TopupRow)
  }),
  "usage facts"
)

/**
 * Read-only facts for `get_usage`: today's free-tier use for the IP, the account's last 30 days, its
 * subscription and purchases.
 */
export class Usage extends Context.Service<
  Usage,
  {
    readonly facts: (accountId: string, keyId: string, ip: string) => Effect.Effect<UsageFacts, SqlError>
  }
>()("services/Usage") {
  static readonly layer = Layer.effect(
    Usage,
    Effect.gen(function* () {
      // Its one statement stands alone: on PostgreSQL it is pipelined with the other hot ones.
      const sql = yield* pipelinedClient
      const settings = yield* Settings
      const { policy } = yield* AppConfig
      // hot path
      const facts = (accountId: string, keyId: string, ip: string): Effect.Effect<UsageFacts, SqlError> =>
        Effect.flatMap(
          Effect.zip(Clock.currentTimeMillis, freeTierTerms(settings, policy.freeCreditsPerIpDay)),
          ([now, terms]) => {
            const today = dayOf(now)
            // One statement, one function of migrations/functions.sql: every number as the money rule's
            // own functions read it (svc_free_left, svc_remaining), beside the history, the
            // subscription, the purchases and the top-up. Its plan is made once per connection.
            return sql`SELECT * FROM svc_usage(${accountId}, ${keyId}, ${ip}, ${today}, ${JSON.stringify(terms)}::jsonb)`.pipe(
              Effect.flatMap(decodeFacts),
              Effect.map((rows): UsageFacts => {
                const row = rows[0]
                const days = row?.days ?? []
                const history = days.map((day) => ({
                  day: dayToIso(day.day),
                  credits: day.credits,
                  calls: day.calls
                }))
                const todayRow = days.find((day) => day.day === today)
                const subscription = row?.subscription ?? undefined
                return {
                  grantCredits: row?.grant_credits ?? 0,
                  balanceCredits: row?.balance_credits ?? 0,
                  freeUsedToday: row?.free_used ?? 0,
                  freeLeft: row?.free_left ?? 0,
                  spendable: row?.spendable ?? 0,
                  keyCapLeft: row?.cap_left ?? undefined,
                  ...(row?.spend_cap_credits === null || row?.spend_cap_credits === undefined
                    ? {}
                    : {
                        keyCap: {
                          spendCapCredits: row.spend_cap_credits,
                          capPeriod: row.cap_period ?? "total",
                          spentInPeriod: row.spent_in_period ?? 0
                        }
                      }),
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
                  purchases: { count: row?.purchases ?? 0, lastAt: row?.last_purchase_at ?? null },
                  ...(row?.topup === null || row?.topup === undefined
                    ? {}
                    : {
                        topup: {
                          enabled: row.topup.enabled,
                          pack: row.topup.pack,
                          belowCredits: row.topup.below_credits,
                          monthlyMaxUsdCents: row.topup.monthly_max_usd_cents,
                          monthSpentUsdCents: row.topup.spent
                        }
                      })
                }
              })
            )
          }
        )
      return Usage.of({ facts })
    })
  )
}
