import { Clock, Effect } from "effect"
import { type AppConfigShape, links } from "../config.ts"
import type { Caller } from "../contract/api.ts"
import type { Unauthorized } from "../contract/errors.ts"
import { upgradeUrl } from "../contract/problem.ts"
import type { Usage } from "../contract/schemas.ts"
import { platformsOf } from "../domain/keyLimits.ts"
import { freeTier, isPaid } from "../domain/plans.ts"
import { nextDayStartIso } from "../domain/time.ts"
import type { MeteredCaller } from "../metering/meterDataCall.ts"
import type { UsageFacts, Usage as UsageFactsService } from "../services/Usage.ts"

type ReportConfig = Pick<AppConfigShape, "baseUrl" | "upgradeUrl" | "policy">

/**
 * `get_usage` (REST `GET /v1/usage` and the MCP tool) for the calling key, read in one statement.
 * A caller taken from memory unconfirmed (`Principal.unconfirmed`) is confirmed by that statement:
 * it reads the identity versions of the key and its account, and when they are no longer those the
 * caller was read at, the key is read again (UNAUTHORIZED when it can no longer spend) and so is
 * the report.
 */
// hot path
export const currentUsage = (
  usage: UsageFactsService["Service"],
  config: ReportConfig,
  caller: MeteredCaller
): Effect.Effect<typeof Usage.Type, Unauthorized> => {
  const { account, key, ip, unconfirmed } = caller
  return Effect.flatMap(Effect.orDie(usage.facts(account.id, ip, key.id)), (facts) => {
    if (
      unconfirmed === undefined ||
      (facts.versions.account === unconfirmed.versions.account &&
        facts.versions.key === unconfirmed.versions.key)
    )
      return Effect.map(Clock.currentTimeMillis, (now) => usageReport(caller, facts, now, config))
    return Effect.flatMap(unconfirmed.reread, (identity) => currentUsage(usage, config, { ...identity, ip }))
  })
}

/** The body of `get_usage` (REST `GET /v1/usage` and the MCP tool) for the calling key. */
export const usageReport = (
  { account, key, ip }: Caller["Service"],
  facts: UsageFacts,
  now: number,
  config: ReportConfig
): typeof Usage.Type => {
  const perIpDay = config.policy.freeCreditsPerIpDay
  const paid = isPaid(account.plan)
  const { grantCredits, balanceCredits } = facts
  const hasCredits = paid || grantCredits > 0 || balanceCredits > 0
  return {
    account_id: account.id,
    plan: account.plan,
    state: account.state,
    key_hint: key.hint,
    claimed: account.claimed,
    platforms: platformsOf(account, key),
    ...(paid
      ? {}
      : {
          free_tier: {
            credits_per_ip_day: perIpDay,
            used_today: facts.freeUsedToday,
            remaining_today: Math.max(0, perIpDay - facts.freeUsedToday),
            ip,
            resets_at: nextDayStartIso(now),
            freshness: freeTier.freshness,
            first_page_only: freeTier.firstPageOnly
          }
        }),
    ...(hasCredits
      ? {
          balance: {
            grant: grantCredits,
            purchased: balanceCredits,
            total: grantCredits + balanceCredits
          }
        }
      : {}),
    today: facts.today,
    history: facts.history,
    rate_limit_per_minute: config.policy.ratePerMinute[account.plan],
    ...(facts.subscription === undefined
      ? {}
      : {
          subscription: {
            pack: facts.subscription.pack,
            rail: facts.subscription.rail,
            status: facts.subscription.status,
            current_period_end: new Date(facts.subscription.currentPeriodEnd).toISOString(),
            cancel_at_period_end: facts.subscription.cancelAtPeriodEnd
          }
        }),
    ...(facts.purchases.lastAt === null
      ? {}
      : {
          purchases: {
            count: facts.purchases.count,
            last_purchase_at: new Date(facts.purchases.lastAt).toISOString()
          }
        }),
    ...(facts.topup === undefined
      ? {}
      : {
          topup: {
            enabled: facts.topup.enabled,
            pack: facts.topup.pack,
            below_credits: facts.topup.belowCredits,
            monthly_max_usd_cents: facts.topup.monthlyMaxUsdCents,
            month_spent_usd_cents: facts.topup.monthSpentUsdCents
          }
        }),
    upgrade_url: upgradeUrl(config.upgradeUrl, account.id),
    ...(account.plan === "trial" && !account.claimed
      ? { claim_url: `${links(config.baseUrl).claim}?account=${account.id}` }
      : {})
  }
}
