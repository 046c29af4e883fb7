import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import type { AuditEvent, AuditPage } from "../../../services/Audit.ts"
import { Audit } from "../../../services/Audit.ts"
import { html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import { accountQuery, dashboardPage, dateOf, type Frame, type Notes, notes } from "./layout.ts"

const perPage = 50

/** What each action says to a person reading the log. */
const actionWords: Record<string, string> = {
  signed_in: "Signed in",
  "token.revoked": "Sign-in revoked",
  "key.created": "Key created",
  "key.updated": "Key limits changed",
  "key.rotated": "Key rotated",
  "key.revoked": "Key revoked",
  "child_key.created": "Child key created",
  "child_key.revoked": "Child key revoked",
  "child_key.updated": "Child key changed by its parent",
  "account.rekeyed": "Account recovered (all keys replaced)",
  "alert.set": "Balance alert set",
  "credits.purchased": "Credits purchased",
  "subscription.renewed": "Subscription renewed",
  "subscription.ended": "Subscription ended",
  "app.connected": "App connected",
  "app.revoked": "App revoked",
  "webhook.created": "Webhook created",
  "webhook.deleted": "Webhook deleted",
  "topup.armed": "Automatic top-up armed",
  "topup.disarmed": "Automatic top-up disarmed",
  "topup.succeeded": "Automatic top-up paid",
  "operator.credit": "Credits added by the operator",
  "operator.plan": "Plan set by the operator",
  "operator.entitle": "Platforms set by the operator",
  "operator.suspend": "Suspended by the operator",
  "operator.reinstate": "Reinstated by the operator"
}

const actorWords = (event: AuditEvent) => {
  switch (event.actor.kind) {
    case "email":
      return event.actor.id
    case "key":
      return html`key <code>${event.actor.id}</code>`
    case "app":
      return html`app <code>${event.actor.id}</code>`
    case "operator":
      return "the operator"
    case "service":
      return "the service"
  }
}

const eventRow = (event: AuditEvent) =>
  html`<tr><td>${dateOf(event.at)}</td><td>${actionWords[event.action] ?? event.action}</td><td>${actorWords(event)}</td><td>${
    event.target === null ? "" : html`<code>${event.target}</code>`
  }</td><td>${event.ip ?? ""}</td></tr>`

/** Activity: who changed what on the account, newest first, a page at a time. */
export const activityPage = (frame: Frame, page: AuditPage, paged: boolean, options: Notes = {}) => {
  const base = `${frame.baseUrl}/dashboard/activity?${accountQuery(frame.account)}`
  return dashboardPage(
    frame,
    "activity",
    "Activity",
    html`${notes(options)}
<p>Every change to <code>${frame.account.id}</code>: sign-ins, keys, apps, webhooks, payments and the operator's changes,
with who made it and from which address. Each is recorded with the change itself; no secret is ever written here.</p>
${
  page.events.length === 0
    ? html`<p>Nothing has changed on this account yet.</p>`
    : html`<table tabindex="0"><caption>Changes, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">By</th><th scope="col">On</th><th scope="col">From</th></tr></thead>
<tbody>${page.events.map(eventRow)}</tbody></table>`
}
<p>${paged ? html`<a href="${base}">Newest</a>` : ""}${paged && page.next_cursor !== null ? " · " : ""}${
      page.next_cursor === null
        ? ""
        : html`<a href="${base}&amp;cursor=${page.next_cursor}">Older changes</a>`
    }</p>`
  )
}

/** `/dashboard/activity`: the audit log, through the same service as `GET /v1/audit`. */
export const ActivityRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const audit = yield* Audit
    yield* router.add(
      "GET",
      "/dashboard/activity",
      guard.signedInPage((frame, _governor, query) => {
        const cursor = query.get("cursor")?.trim() || undefined
        return audit.list(frame.account.id, { limit: perPage, cursor }).pipe(
          Effect.map((page) => guard.respond(activityPage(frame, page, cursor !== undefined))),
          Effect.catchTag("InvalidInput", () =>
            audit.list(frame.account.id, { limit: perPage }).pipe(
              Effect.map((page) =>
                guard.respond(
                  activityPage(frame, page, false, {
                    error: "That page of the activity does not exist; here are the newest changes."
                  }),
                  400
                )
              )
            )
          ),
          // The page reads the same limited log as GET /v1/audit: past its limit, say when to come back.
          Effect.catchTag("RateLimited", (limited) =>
            Effect.succeed(
              guard.respond(
                guard.barePage(
                  "Too many reads",
                  html`<p>The activity of this account was read too often just now. Reload in ${String(limited.retry_after_seconds)} seconds.</p>`
                ),
                429
              )
            )
          )
        )
      })
    )
  })
)
