import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { type ConnectedApp, OAuthServer } from "../../../oauth/OAuthServer.ts"
import { html } from "../pages/html.ts"
import { dashboardGuard } from "./guard.ts"
import {
  dashboardPage,
  dateOf,
  type Frame,
  formFields,
  hidden,
  itemList,
  type Notes,
  notes
} from "./layout.ts"

/** Connected apps: the MCP clients this account authorised by OAuth, each revocable at once. */
export const appsPage = (frame: Frame, apps: ReadonlyArray<ConnectedApp>, options: Notes = {}) =>
  dashboardPage(
    frame,
    "apps",
    "Connected apps",
    html`${notes(options)}
<p>MCP clients you connected by signing in from them (OAuth). Each one spends this account's credits; its calls'
receipts carry its app id. Revoking one stops all its tokens at once; it can ask to connect again.</p>
${
  apps.length === 0
    ? html`<p>No app is connected to <code>${frame.account.id}</code>. Point an MCP client at this service's <code>/mcp</code>
address and sign in when it asks; it then shows here.</p>`
    : itemList(
        `Apps connected to ${frame.account.id}`,
        apps.map((app) => ({
          title: app.client_name,
          facts: [
            ["App id", html`<code>${app.app_id}</code>`],
            ["Returns to", app.redirect_host],
            ["Reaches", app.mounts.join(", ")],
            ["Connected", dateOf(app.created_at)],
            ["Last used", dateOf(app.last_used_at)]
          ],
          actions: html`<form method="post" action="${frame.baseUrl}/dashboard/apps/revoke">${formFields(frame.csrf, frame.account)}${hidden("app_id", app.app_id)}<button type="submit" aria-label="Revoke ${app.client_name} (${app.app_id})">Revoke</button></form>`
        }))
      )
}`
  )

/** `/dashboard/apps`: list and revoke, through the OAuth server's own records. */
export const DashboardAppsRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const oauth = yield* OAuthServer
    const show = (frame: Frame, options: Notes = {}, status = 200) =>
      Effect.map(oauth.apps(frame.account.id), (apps) =>
        guard.respond(appsPage(frame, apps, options), status)
      )

    yield* router.add(
      "GET",
      "/dashboard/apps",
      guard.signedInPage((frame) => show(frame))
    )
    yield* router.add(
      "POST",
      "/dashboard/apps/revoke",
      guard.signedInForm((frame, _governor, form) =>
        oauth.revoke(frame.account.id, form.get("app_id").slice(0, 64)).pipe(
          Effect.flatMap(() => show(frame, { ok: "The app is revoked: its tokens stopped working." })),
          Effect.catchTag("NotFound", () =>
            show(
              frame,
              {
                error:
                  "That app is not connected to this account (or is already revoked). Choose one from the list."
              },
              404
            )
          )
        )
      )
    )
  })
)
