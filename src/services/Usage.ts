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

/**
 * The ISO dates of the days a report names (the last 30), formatted once each rather than by a
 * `Date` per day per request; bounded, cleared when it would outgrow a few months.
 */
const isoDays = new Map<number, string>()
const isoDay = (day: number): string => {
  const known = isoDays.get(day)
  if (known !== undefined) return known
  if (isoDays.size >= 100) isoDays.clear()
  const iso = dayToIso(day)
  isoDays.set(day, iso)
  return iso
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
            const month = isoDay(today).slice(0, 7)
            // One statement: the credits as they are now (the caller's account may be remembered from
            // an earlier request), today's free use of the IP, what the next call finds as the money
            // rule's own functions compute it (the free budget left, the spendable credits, the
            // tightest cap's remainder: svc_free_left_of, svc_spendable, svc_key_cap, svc_cap_reported,
            // the functions svc_funding and svc_remaining are made of), the calling key's own cap and
            // spend, 30 days (each day's settled calls as they counted themselves,
            // migrations/0018_usage_days.sql), the subscription, the purchases. The rule's scalar
            // functions are SQL expressions the planner inlines into this statement's kept plan,
            // where a call of the PL/pgSQL ones costs a function call each (docs/performance.md).
            // A key with neither a cap nor a parent has no cap to read (most keys, as svc_key_cap says):
            // its own row is read and nothing else. Another key's cap is svc_key_cap's, called only
            // then: the inlined svc_key_caps, as a subquery of this statement, cost every request
            // about 70 µs of PGlite's CPU to set up even when it did not run (docs/performance.md).
            // The day's free use (free_tier_days) is a subquery in svc_free_left_of's argument rather
            // than a join: about 30 µs less, the statement alone on PGlite.
            return sql`
          SELECT a.grant_credits, a.balance_credits, fu.credits_used AS free_used,
            fl.free_left, svc_spendable(fl.free_left, a.grant_credits, a.balance_credits) AS spendable,
            svc_cap_reported(CASE WHEN k.id IS NOT NULL AND k.spend_cap_credits IS NULL AND k.parent_key_id IS NULL
              THEN NULL ELSE (svc_key_cap(${keyId}, ${today})).cap_left END) AS cap_left,
            k.spend_cap_credits, k.cap_period,
            CASE WHEN k.spend_cap_credits IS NOT NULL THEN (SELECT s.spent FROM key_spend s
              WHERE s.key_id = k.id AND s.period = svc_period(k.cap_period, ${today})) END AS spent_in_period,
            (SELECT COALESCE(json_agg(d ORDER BY d.day DESC), '[]'::json) FROM (
              SELECT u.day, u.credits, u.calls FROM usage_days u
              WHERE u.account_id = a.id AND u.day > ${today - 30}) d) AS days,
            (SELECT row_to_json(s) FROM (
              SELECT pack, rail, status, current_period_end, cancel_at_period_end FROM subscriptions
              WHERE account_id = a.id
              ORDER BY (status = 'active') DESC, created_at DESC, id DESC LIMIT 1) s) AS subscription,
            (SELECT COUNT(*) FROM purchases p WHERE p.account_id = a.id) AS purchases,
            (SELECT MAX(p.created_at) FROM purchases p WHERE p.account_id = a.id) AS last_purchase_at,
            (SELECT row_to_json(t) FROM (
              SELECT s.enabled, s.pack, s.below_credits, s.monthly_max_usd_cents,
                (SELECT COALESCE(SUM(u.price_usd_cents), 0) FROM topups u
                  WHERE u.account_id = a.id AND u.month = ${month} AND u.state <> 'failed') AS spent
              FROM topup_settings s WHERE s.account_id = a.id) t) AS topup
          FROM accounts a
          LEFT JOIN free_tier_usage fu ON fu.ip = ${ip} AND fu.day = ${today}
          CROSS JOIN LATERAL (SELECT svc_free_left_of(svc_free_counts(a.plan, false, ${terms.free_open}),
            ${terms.free_per_ip}, ${terms.global_free}::bigint, COALESCE(fu.credits_used, 0),
            COALESCE((SELECT d.credits_used FROM free_tier_days d WHERE d.day = ${today}), 0)) AS free_left) fl
          LEFT JOIN api_keys k ON k.id = ${keyId} AND k.account_id = a.id
          WHERE a.id = ${accountId}`.pipe(
              Effect.flatMap(decodeFacts),
              Effect.map((rows): UsageFacts => {
                const row = rows[0]
                const days = row?.days ?? []
                const history = days.map((day) => ({
                  day: isoDay(day.day),
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
