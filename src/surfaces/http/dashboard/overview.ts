import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import type { Usage } from "../../../contract/schemas.ts"
import { count } from "../checkout/format.ts"
import { type Html, html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import { accountQuery, dashboardPage, dateOf, type Frame, type Notes, notes } from "./layout.ts"
import { usageReporter } from "./report.ts"

const figure = (label: string, value: string | number, detail?: Html | string) =>
  html`<div class="figure">${label}<strong>${typeof value === "number" ? count(value) : value}</strong>${detail ?? ""}</div>`

/** Overview: plan, spendable credits, today's free budget and the period end. */
export const overviewPage = (frame: Frame, usage: typeof Usage.Type, options: Notes = {}) => {
  const q = accountQuery(frame.account)
  const balance = usage.balance
  const free = usage.free_tier
  const subscription = usage.subscription
  return dashboardPage(
    frame,
    "overview",
    "Overview",
    html`${notes(options)}
<div class="figures">
${figure("Plan", usage.plan, usage.state === "active" ? "" : html`<span class="error">Suspended: write to the operator's support address.</span>`)}
${figure("Spendable credits", usage.credits_remaining, html`${free === undefined ? "" : html`free today ${count(free.remaining_today)}, `}grant ${count(balance?.grant ?? 0)}, purchased ${count(balance?.purchased ?? 0)}`)}
${
  free === undefined
    ? figure("Free budget", "not used", "Paid plans spend credits, not the free tier.")
    : figure(
        "Free budget left today",
        free.remaining_today,
        html`of ${count(free.credits_per_ip_day)} for ${free.ip}; resets ${dateOf(free.resets_at)}`
      )
}
${
  subscription === undefined
    ? figure(
        "Period end",
        "no subscription",
        html`<a href="${frame.baseUrl}/dashboard/billing?${q}">See packs</a>`
      )
    : figure(
        "Period end",
        dateOf(subscription.current_period_end),
        `${subscription.pack}, ${subscription.status}${subscription.cancel_at_period_end ? ", ends then" : ", renews then"}`
      )
}
${figure("Used today", usage.today.credits, html`credits in ${count(usage.today.calls)} ${usage.today.calls === 1 ? "call" : "calls"}`)}
</div>
${
  (balance?.total ?? 0) === 0 && free !== undefined
    ? html`<p>This account has no credits beyond the free budget. <a href="${frame.baseUrl}/dashboard/billing?${q}">Buy a pack</a>
to keep calling when the free budget runs out.</p>`
    : ""
}
<h2>Next steps</h2>
<ul>
<li><a href="${frame.baseUrl}/dashboard/keys?${q}">Create or rotate a key</a></li>
<li><a href="${frame.baseUrl}/dashboard/usage?${q}">See usage and receipts</a></li>
<li><a href="${frame.baseUrl}/dashboard/billing?${q}">Set a balance alert, buy credits, open the billing portal</a></li>
</ul>`
  )
}

/** `/dashboard`: the account at a glance, and where to go next. */
export const OverviewRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const reportFor = yield* usageReporter
    yield* router.add(
      "GET",
      "/dashboard",
      guard.signedInPage((frame, governor) =>
        Effect.map(reportFor(governor, frame.account), (report) => guard.respond(overviewPage(frame, report)))
      )
    )
  })
)
