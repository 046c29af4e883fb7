import { type AppConfigShape, links } from "../config.ts"
import type { Caller } from "../contract/api.ts"
import { upgradeUrl } from "../contract/problem.ts"
import type { Usage } from "../contract/schemas.ts"
import { capResetsAtIso, platformsOf } from "../domain/keyLimits.ts"
import { freeTier, isPaid } from "../domain/plans.ts"
import { nextDayStartIso } from "../domain/time.ts"
import type { UsageFacts } from "../services/Usage.ts"

/** The calling key's own cap; its remainder is the charge's (`svc_key_cap`: the tightest of its and its parent's). */
const spendCap = (cap: NonNullable<UsageFacts["keyCap"]>, remaining: number, now: number) => {
  const resetsAt = capResetsAtIso(cap.capPeriod, now)
  return {
    credits: cap.spendCapCredits,
    period: cap.capPeriod,
    spent_in_period: cap.spentInPeriod,
    remaining,
    ...(resetsAt === undefined ? {} : { resets_at: resetsAt })
  }
}

/** The body of `get_usage` (REST `GET /v1/usage` and the MCP tool) for the calling key. */
export const usageReport = (
  { account, key, ip }: Caller["Service"],
  facts: UsageFacts,
  now: number,
  config: Pick<AppConfigShape, "baseUrl" | "upgradeUrl" | "policy">
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
            remaining_today: facts.freeLeft,
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
    credits_remaining: facts.spendable,
    ...(facts.keyCapLeft === undefined ? {} : { key_cap_remaining: facts.keyCapLeft }),
    key: {
      key_id: key.id,
      ...(key.parentKeyId === undefined ? {} : { parent_key_id: key.parentKeyId }),
      ...(facts.keyCap === undefined || facts.keyCapLeft === undefined
        ? {}
        : { spend_cap: spendCap(facts.keyCap, facts.keyCapLeft, now) })
    },
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
