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

/** The free budget as `svc_usage_free` reports it (JSON). */
const FreeJson = Schema.Struct({ used: Row.NullableInt, free_left: Row.Int, spendable: Row.Int })

/** The key's cap as `svc_usage_key` reports it (JSON). */
const KeyCapJson = Schema.Struct({
  cap_left: Row.NullableInt,
  spend_cap_credits: Row.NullableInt,
  cap_period: Schema.Literals(["day", "month", "total"]),
  spent_in_period: Row.NullableInt
})

/** Everything `get_usage` reads, in one row (the lists and the rarer parts as JSON). */
const decodeFacts = Row.decoder(
  Schema.Struct({
    grant_credits: Row.Int,
    balance_credits: Row.Int,
    free: Schema.NullOr(FreeJson),
    spendable: Row.Int,
    key_cap: Schema.NullOr(KeyCapJson),
    days: Schema.Array(DayRow),
    subscription: Schema.NullOr(SubscriptionRow),
    purchases: Schema.Struct({ count: Row.Int, last_at: Row.NullableInt }),
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
      // Its one statement stands alone: on PostgreSQL it is pipelined with the other usage reads.
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
            // an earlier request), what the next call finds as the money rule's own functions compute
            // it, 30 days (each day's settled calls as they counted themselves,
            // migrations/0018_usage_days.sql), the subscription, the purchases, the top-up.
            // Every table a statement's kept plan names costs each execution its set-up, read or not
            // (on PGlite about 20-30 µs of CPU each, docs/performance.md), so what most requests do not
            // need is a call of a function of the rule that reads it, made only when it is needed:
            // the free budget's rows for an account the free budget can count for (svc_usage_free,
            // from svc_free_counts, svc_free_left_of, svc_spendable), the key's cap for a key with a
            // cap or a parent (svc_usage_key, from svc_key_cap), chosen from the key's own row here:
            // a PL/pgSQL call costs PGlite more than a table in the plan, and most keys have neither
            // (measured side by side with 2f5c227: 1.087x its CPU a request calling it for every key,
            // 0.974x and 1.029x so). Any other account's spendable credits are svc_spendable's with
            // no free budget, as svc_free_left_of has none for it.
            return sql`
          SELECT a.grant_credits, a.balance_credits,
            CASE WHEN svc_free_counts(a.plan, false, true) THEN svc_usage_free(a.plan, a.grant_credits,
              a.balance_credits, ${ip}, ${today}, ${terms.free_per_ip}, ${terms.free_open}, ${terms.global_free}::bigint)
              END AS free,
            svc_spendable(0, a.grant_credits, a.balance_credits) AS spendable,
            (SELECT svc_usage_key(a.id, k.id, ${today}) FROM api_keys k WHERE k.id = ${keyId}
              AND k.account_id = a.id AND (k.spend_cap_credits IS NOT NULL OR k.parent_key_id IS NOT NULL)) AS key_cap,
            (SELECT COALESCE(json_agg(d ORDER BY d.day DESC), '[]'::json) FROM (
              SELECT u.day, u.credits, u.calls FROM usage_days u
              WHERE u.account_id = a.id AND u.day > ${today - 30}) d) AS days,
            (SELECT row_to_json(s) FROM (
              SELECT pack, rail, status, current_period_end, cancel_at_period_end FROM subscriptions
              WHERE account_id = a.id
              ORDER BY (status = 'active') DESC, created_at DESC, id DESC LIMIT 1) s) AS subscription,
            (SELECT json_build_object('count', COUNT(*), 'last_at', MAX(p.created_at)) FROM purchases p
              WHERE p.account_id = a.id) AS purchases,
            (SELECT row_to_json(t) FROM (
              SELECT s.enabled, s.pack, s.below_credits, s.monthly_max_usd_cents,
                (SELECT COALESCE(SUM(u.price_usd_cents), 0) FROM topups u
                  WHERE u.account_id = a.id AND u.month = ${month} AND u.state <> 'failed') AS spent
              FROM topup_settings s WHERE s.account_id = a.id) t) AS topup
          FROM accounts a
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
                const free = row?.free ?? null
                const keyCap = row?.key_cap ?? null
                return {
                  grantCredits: row?.grant_credits ?? 0,
                  balanceCredits: row?.balance_credits ?? 0,
                  freeUsedToday: free?.used ?? 0,
                  freeLeft: free?.free_left ?? 0,
                  spendable: free?.spendable ?? row?.spendable ?? 0,
                  keyCapLeft: keyCap?.cap_left ?? undefined,
                  ...(keyCap === null || keyCap.spend_cap_credits === null
                    ? {}
                    : {
                        keyCap: {
                          spendCapCredits: keyCap.spend_cap_credits,
                          capPeriod: keyCap.cap_period,
                          spentInPeriod: keyCap.spent_in_period ?? 0
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
                  purchases: { count: row?.purchases.count ?? 0, lastAt: row?.purchases.last_at ?? null },
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
