import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import type { Governor } from "../../../domain/accounts.ts"
import { ManagementTokens, type TokenListing } from "../../../services/ManagementTokens.ts"
import { html } from "../pages/html.ts"
import { withoutSession } from "../pages/respond.ts"
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

export const tokensPage = (frame: Frame, tokens: ReadonlyArray<TokenListing>, options: Notes = {}) =>
  dashboardPage(
    frame,
    "tokens",
    "Sign-ins",
    html`${notes(options)}
<p>Each sign-in (this browser, a command-line client, a device) holds a management token of <strong>${frame.email}</strong>.
Revoke the ones you do not recognise; they stop working at once.</p>
${itemList(
  "Management tokens",
  tokens.map((token) => ({
    title: `${token.label}${token.current ? " (this browser)" : ""}`,
    facts: [
      ["Created", dateOf(token.created_at)],
      ["Last used", dateOf(token.last_used_at)],
      ["Expires", dateOf(token.expires_at)]
    ],
    actions: html`<form method="post" action="${frame.baseUrl}/dashboard/tokens/revoke">${formFields(frame.csrf, frame.account)}${hidden("token_id", token.token_id)}${
      token.current
        ? html`<button type="submit">Sign out this browser</button>`
        : html`<button type="submit" aria-label="Revoke the ${token.label} sign-in created ${dateOf(token.created_at)}">Revoke</button>`
    }</form>`
  }))
)}`
  )

/** `/dashboard/tokens`: the email's management tokens; revoking this browser's own signs it out. */
export const TokensRoutes = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const guard = yield* dashboardGuard([])
    const { config } = guard
    const managementTokens = yield* ManagementTokens
    const showTokens = (frame: Frame, governor: Governor, options: Notes = {}, status = 200) =>
      Effect.map(managementTokens.list(governor), (tokens) =>
        guard.respond(tokensPage(frame, tokens, options), status)
      )

    yield* router.add(
      "GET",
      "/dashboard/tokens",
      guard.signedInPage((frame, governor) => showTokens(frame, governor))
    )

    yield* router.add(
      "POST",
      "/dashboard/tokens/revoke",
      guard.signedInForm((frame, governor, form) =>
        Effect.gen(function* () {
          const tokenId = form.get("token_id")
          const revoked = yield* managementTokens.revoke(governor, tokenId).pipe(Effect.option)
          if (revoked._tag === "None")
            return yield* showTokens(
              frame,
              governor,
              {
                error: "That sign-in is not one of yours, or it is already revoked. Choose one from the list."
              },
              404
            )
          if (tokenId === governor.tokenId)
            return withoutSession(
              guard.respond(
                guard.barePage(
                  "Signed out",
                  html`<p>This browser's sign-in is revoked. <a href="${config.baseUrl}/login">Sign in again</a>.</p>`
                )
              ),
              config.baseUrl
            )
          return yield* showTokens(frame, governor, {
            ok: "That sign-in is revoked; it stopped working at once."
          })
        })
      )
    )
  })
)
